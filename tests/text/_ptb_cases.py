"""CoreNLP 3.4.1 jar through pycocoevalcap's wrapper, re-run on OpenJDK 17 (the table of the
team's shared protocols document, PROTOCOLS.md §1.2, kept outside this repository).

Shared by the pure-Python and the jar-backed tokenizer tests. Each pair is (input, output).
"""

TABLE = [
    (
        "A man's colour T-shirt (red) & \"blue\" hat... isn't it?",
        "a man 's colour t-shirt -lrb- red -rrb- & blue hat is n't it",
    ),
    ("(A) [B] {C} <D>", "-lrb- a -rrb- -lsb- b -rsb- -lcb- c -rcb- <d>"),
    (
        "I can't, cannot, won't, don't; gimme lemme y'all '90s",
        "i ca n't can not wo n't do n't gim me lem me y' all '90s",
    ),
    ("They're gonna play ... $5 #1 @home *star*", "they 're gon na play $ 5 # 1 @home * star *"),
    ("Two dogs -- one black/white -- play ...; it's cold!", "two dogs one black/white play it 's cold"),
    ("A man - woman -- pair \u2014 dash \u2013 en", "a man woman pair dash en"),
    (
        "\u201cCurly\u201d quotes and \u2018single\u2019 ones\u2026 plus ellipsis",
        "curly quotes and single ones plus ellipsis",
    ),
    (
        "1,000 people at 3:30 p.m. e.g. Mr. Smith etc.",
        "1,000 people at 3:30 p.m. e.g. mr. smith etc.",
    ),
    ("An AEROPLANE flies over U.S. harbour.", "an aeroplane flies over u.s. harbour"),
    ("A caf\u00e9 ... 3.5 km away: 50% off", "a caf\u00e9 3.5 km away 50 % off"),
    ("a <b>bold</b> &amp; tag; AT&T rocks", "a <b> bold </b> & tag at&t rocks"),
    ("semi;colon:colon!bang?q", "semi colon colon!bang?q"),
    ("it's 5'10\" tall", "it 's 5 10 tall"),
    ("the 1980s' style, rock 'n' roll", "the 1980s style rock 'n' roll"),
    (
        "na\u00efve r\u00e9sum\u00e9 with emoji \U0001F600 and a \u00bd cup",
        "na\u00efve r\u00e9sum\u00e9 with emoji and a 1/2 cup",
    ),
    ("tabs\tand\u00a0nbsp  double  spaces", "tabs and nbsp double spaces"),
    ("A dog runs.", "a dog runs"),
    ("a man with a ` backtick", "a man with a backtick"),
    ("he said -- hi", "he said hi"),
    ("well - done", "well done"),
    ("a--b", "a b"),
    ("x ; y : z", "x y z"),
    ("one ' two", "one two"),
    ("it is 10 ? yes !", "it is 10 yes"),
    ("-LRB- literal", "-lrb- literal"),
    ("", ""),
]
