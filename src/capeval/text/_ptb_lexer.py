"""Longest-match lexer emulating CoreNLP 3.4.1's ``PTBLexer`` as pycocoevalcap runs it.

This is the exact-but-slow path of :mod:`capeval.text.ptb`. ``PTBLexer`` is a JFlex scanner:
at each position every rule is tried, the longest match wins (a trailing context ``r1/r2``
counts with its context), ties go to the rule listed first, and only ``r1`` is consumed. We
reproduce that with one anchored Python regex per rule; a rule with trailing context keeps
the context in a lookahead whose single capturing group gives the length JFlex compares.

The rules and their order were established against the jar shipped in pycocoevalcap 1.2
(flags ``-preserveLines -lowerCase``: PTB3 escaping of brackets, quotes, dashes and
ellipses, but no Americanization and no slash/asterisk escaping); see docs/TOKENIZER.md for
how, and for the known differences. Only behaviour
that can change the *filtered, lower-cased* output is modelled: e.g. CoreNLP's duplicated
sentence-final period after an abbreviation is not, because the wrapper drops ``.`` anyway.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import lru_cache

# ---------------------------------------------------------------------------------------------
# Character classes. JFlex's [:letter:] / [:digit:] are Java's Character.isLetter / isDigit of
# the JDK that built the jar.


# Extra code points PTBLexer accepts inside words (combining marks, some modifier letters, ...).
_LETTER_EXTRA = (
    "\u00AD\u0237-\u024F\u02C2-\u02C5\u02D2-\u02DF\u02E5-\u02FF\u0300-\u036F\u0370-\u037D"
    "\u0384\u0385\u03CF\u03F6\u03FC-\u03FF\u0483-\u0487\u04CF\u04F6-\u04FF\u0510-\u0525"
    "\u055A-\u055F\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\u0615-\u061A\u063B-\u063F"
    "\u064B-\u065E\u0670\u06D6-\u06EF\u06FA-\u06FF\u070F\u0711\u0730-\u074F\u0750-\u077F"
    "\u07A6-\u07B1\u07CA-\u07F5\u07FA\u0900-\u0903\u093C\u093E-\u094E\u0951-\u0955"
    "\u0962-\u0963\u0981-\u0983\u09BC-\u09C4\u09C7\u09C8\u09CB-\u09CD\u09D7\u09E2\u09E3"
    "\u0A01-\u0A03\u0A3C\u0A3E-\u0A4F\u0A81-\u0A83\u0ABC-\u0ACF\u0B82\u0BBE-\u0BC2"
    "\u0BC6-\u0BC8\u0BCA-\u0BCD\u0C01-\u0C03\u0C3E-\u0C56\u0D3E-\u0D44\u0D46-\u0D48"
    "\u0E30-\u0E3A\u0E47-\u0E4E\u0EB1-\u0EBC\u0EC8-\u0ECD"
)


#: The classes restricted to ASCII. On ASCII text they match exactly what the full classes match
#: (their only ASCII members are these; _LETTER_EXTRA has none; the (?i) groups add no ASCII
#: character either), and compiling the rules with them takes a fraction of the time: most
#: captions are ASCII, and compiling the full grammar is most of the general path's first call.
_ASCII_CLASSES = {"L": "[A-Za-z]", "A": "[A-Za-z]", "D": "[0-9]", "AD": "[A-Za-z0-9]"}


@lru_cache(maxsize=1)
def _classes() -> dict[str, str]:
    # The jar's own tables (Unicode 6.x, read off the jar by benchmarks/ptb_jar_classes.py),
    # not Python's: letters added since are untokenizable for the jar, and code points whose
    # category changed since keep their old class there, whatever Python's version says.
    from ._ptb_jar_classes import DIGITS, LETTERS

    return {
        "L": f"[{LETTERS}{_LETTER_EXTRA}]",  # a letter char (SPLET entities handled separately)
        "A": f"[{LETTERS}]",  # [:letter:]
        "D": f"[{DIGITS}]",  # [:digit:]
        "AD": f"[{LETTERS}{DIGITS}]",  # [:letter:]|[:digit:]
    }


# ---------------------------------------------------------------------------------------------
# Token normalisations (PTB3 escaping as CoreNLP 3.4.1's PTBTokenizer applies it by default).

_OPEN_PAREN, _CLOSE_PAREN = "-LRB-", "-RRB-"


def _remove_soft_hyphens(s: str) -> str:
    out = s.replace("\u00AD", "")
    return out if out else "-"


# The rules match the entities in any case, but these replacements are case-sensitive, as
# CoreNLP's: "&QUOT;" stays a token of its own (kept by the wrapper), "&APOS;s" stays "&apos;s".
_LATEX_STEPS_LEFT = ((re.compile(r"&apos;|'"), "`"), (re.compile(r'"|&quot;'), "``"))
_LATEX_STEPS_RIGHT = ((re.compile(r"&apos;|'"), "'"), (re.compile(r'"|&quot;'), "''"))
_LATEX_STEPS_COMMON = (
    (re.compile("[\u0091\u2018\u201B\u2039]"), "`"),
    (re.compile("[\u0092\u2019\u203A]"), "'"),
    (re.compile("[\u0093\u201C\u00AB]"), "``"),
    (re.compile("[\u0094\u201D\u00BB]"), "''"),
)


def _latex_quotes(tok: str, probably_left: bool) -> str:
    for rx, rep in _LATEX_STEPS_LEFT if probably_left else _LATEX_STEPS_RIGHT:
        tok = rx.sub(rep, tok)
    for rx, rep in _LATEX_STEPS_COMMON:
        tok = rx.sub(rep, tok)
    return tok


def _right_quotes(tok: str) -> str:
    return _latex_quotes(tok, False)


def _left_quotes(tok: str) -> str:
    return _latex_quotes(tok, True)


_AMP = re.compile("(?i:&amp;)")


def _norm_amp(tok: str) -> str:
    return _AMP.sub("&", tok)


_CURRENCY = (("\u00A2", "cents"), ("\u00A3", "#"), ("\u0080", "$"), ("\u00A4", "$"), ("\u20A0", "$"), ("\u20AC", "$"))


def _norm_currency(tok: str) -> str:
    for a, b in _CURRENCY:
        tok = tok.replace(a, b)
    return tok


_FRACTIONS = {"\u00BC": "1/4", "\u00BD": "1/2", "\u00BE": "3/4", "\u2153": "1/3", "\u2154": "2/3"}


def _norm_fraction(tok: str) -> str:
    return _FRACTIONS.get(tok, tok)


def _nbsp(tok: str) -> str:
    return tok.replace(" ", "\u00A0")


def _phone(tok: str) -> str:
    return _nbsp(tok).replace("(", _OPEN_PAREN).replace(")", _CLOSE_PAREN)


def _parens(tok: str) -> str:
    return tok.replace("(", _OPEN_PAREN).replace(")", _CLOSE_PAREN)


def _const(value: str):
    return lambda tok: value


def _hyphens(tok: str) -> str:
    return "--" if 3 <= len(tok) <= 4 else tok


# Actions: None keeps the matched text; ("skip",) emits nothing; ("push", k) keeps the first
# len-k chars and re-lexes the rest; ("acro",) is processAcronym (a one-letter acronym gives the
# letter alone and re-lexes the period); a callable maps the matched text to the token.
SKIP = ("skip",)
ACRO = ("acro",)


def _push(k: int):
    return ("push", k)


# ---------------------------------------------------------------------------------------------
# The grammar. Literal words are caseless (JFlex %caseless) but character classes are not,
# hence the many (?i:...) groups. Unicode case-insensitive, not ASCII-only: JFlex's caseless
# letters take every character whose Java case mapping gives the letter, so "i" also matches
# "İ" and "ı", "s" matches "ſ" and "k" the Kelvin sign, as Python's (?i) does ("cİe." is
# "Cie.", an abbreviation, for the jar).


#: (regex, trailing context or None, action, class of possible first characters or None)
RuleSpec = tuple[str, "str | None", object, "str | None"]


def _rules(ascii_only: bool = False) -> list[RuleSpec]:
    c = _ASCII_CLASSES if ascii_only else _classes()
    L, A, D, AD = c["L"], c["A"], c["D"], c["AD"]
    SPLET = r"&[aeiouAEIOU](?i:acute|grave|uml);"
    LETTER = f"(?:{L}|{SPLET})"
    SP = "[ \\t\u00A0\u2000-\u200A\u3000]"
    NLCH = "[\\r\\n\u2028\u2029\\x0b\\x0c\\x85]"
    SPNL = f"(?:{SP}|{NLCH})"
    WORD = f"{LETTER}(?:{LETTER}|{D})*(?:[.!?]{LETTER}(?:{LETTER}|{D})*)*"
    APOS = "(?:['\u0092\u2019]|(?i:&apos;))"
    APOSETC = f"(?:{APOS}|[`\u0091\u2018\u201B])"
    REDAUX = f"{APOS}(?:[msdMSD]|(?i:re|ve|ll))"
    SWORD = "[A-Za-z\u00AD]*[A-MO-Za-mo-z]\u00AD*"
    SREDAUX = f"(?i:n){APOSETC}(?i:t)"
    # Alternatives joined with "|\x00" are split into separate rules below.
    APOWORD = "|\x00".join(
        [
            f"{APOS}(?i:n){APOS}?",
            f"[lLdDjJ]{APOS}",
            f"(?i:dunkin|somethin|ol){APOS}",
            f"{APOS}(?i:em|till?|cause)",
            f"[A-HJ-XZn]{APOSETC}{A}{{2}}{A}*",
            f"{APOS}[2-9]0(?i:s)",
            f"{A}+[aeiouyAEIOUY]{APOSETC}[aeiouA-Z]{A}*",
            "(?i:cont'd)\\.?",
            "(?i:'twas|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l)",
            f"(?i:o){APOSETC}(?i:o)",
        ]
    )
    # dotted alternative first so that the leftmost-first match is the longest
    NUM = f"{D}*(?:[.:,\u00AD\u066B\u066C]{D}+)+|{D}+"
    NUMBER = f"[\\-+]?(?:{NUM})"
    HYPHEN = "[-_\u058A\u2010\u2011]"
    THING = f"(?:[dDoOlL]{APOSETC}{AD})?{AD}+(?:{HYPHEN}(?:[dDoOlL]{APOSETC}{AD})?{AD}+)*"
    # The named alternatives first: their leftmost-first match is the longer one.
    ACRO_SPECIAL = "(?i:(?:canada|sino|korean|eu|japan|non)-u\\.s|u\\.s\\.-(?:u\\.k|u\\.s\\.s\\.r))"
    ACRO_ = f"(?:{ACRO_SPECIAL}|[A-Za-z](?:\\.[A-Za-z])*)"
    ACRO2 = f"(?:{ACRO_SPECIAL}|[A-Za-z](?:\\.[A-Za-z])+)"
    HTHING = f"[A-Za-z0-9][A-Za-z0-9.,\u00AD]*(?:-(?:{ACRO2}\\.|[A-Za-z0-9\u00AD]+))+"
    # "&amp;" before "&": the leftmost-first match is then the longest ("AT&AMP;T", not "AT&AMP")
    THINGA = "[A-Z]+(?:(?:(?i:&amp;)|[+&])[A-Z]+)+"
    THING3 = "[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}"
    SGML_NAME = "[A-Za-z][A-Za-z0-9_:.\\-]*"
    SGML = (
        f"<(?:[!?][A-Za-z\\-][^>\\r\\n]*|{SGML_NAME}(?:[ ]+(?:{SGML_NAME}[ ]*=[ ]*"
        f"(?:'[^'\\r\\n]*'|\"[^\"\\r\\n]*\"|{SGML_NAME})|{SGML_NAME}))*[ ]*/?|/{SGML_NAME})[ ]*>"
    )
    DATE = f"{D}{{1,2}}[\\-/]{D}{{1,2}}[\\-/]{D}{{2,4}}"
    SUBSUPNUM = "[\u207A\u207B\u208A\u208B]?(?:[\u2070\u00B9\u00B2\u00B3\u2074-\u2079]+|[\u2080-\u2089]+)"
    FRAC = f"(?:{D}{{1,4}}[- \u00A0])?{D}{{1,4}}(?:\\\\?/|\u2044){D}{{1,4}}"
    FRAC2 = "[\u00BC\u00BD\u00BE\u2153-\u215E]"
    DOLSIGN = "[A-Z]*\\$|#"
    DOLSIGN2 = "[\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6]"
    FULLURL = '://[^ \\t\\n\\f\\r"<>|(){}]+[^ \\t\\n\\f\\r"<>|.!?(){},-]'
    # ({LETTER}|{DIGIT}), not [:letter:]: combining marks and the other extra letters count
    FILENAME = (
        f"(?:{LETTER}|{D})+(?:\\.(?:{LETTER}|{D})+)*\\.(?i:bat|bmp|class|cgi|cpp|c|dll|docx|doc|exe|gif|gz|html|htm|h|jar"
        "|java|jpeg|jpg|mov|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|xml|x|zip)"
    )
    LIKELYURL_WWW = '(?i:www)\\.(?:[^ \\t\\n\\f\\r"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4}'
    # ",-_" is a character range in the original grammar (it excludes digits and capitals).
    LIKELYURL_DOM = '(?:[^ \\t\\n\\f\\r"`\'<>|.!?(){},-_$]+\\.)+(?i:com|net|org|edu)'
    URLPATH = '/[^ \\t\\n\\f\\r"<>|()]+[^ \\t\\n\\f\\r"<>|.!?(){},-]'
    EMAIL = (
        '(?:(?i:&lt;)|<)?[a-zA-Z0-9][^ \\t\\n\\f\\r"<>|()\u00A0{}]*@'
        '(?:[^ \\t\\n\\f\\r"<>|(){}.\u00A0]+\\.)*[^ \\t\\n\\f\\r"<>|(){}.\u00A0]+(?:(?i:&gt;)|>)?'
    )
    TWITTER = f"@[a-zA-Z_][a-zA-Z_0-9]*|#{LETTER}+"
    ABMONTH = "(?i:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)"
    ABDAYS = "(?i:mon|tues?|wed|thu(?:rs)?|fri)"
    ABSTATE = (
        "(?i:ala|ariz)|A(?i:z)|A(?i:rk)|(?i:calif|colo|conn|ct|dak)|D(?i:el)|(?i:fla|ga)|I(?i:ll)"
        "|(?i:ind|kans?|ky)|L(?i:a)|M(?i:ass)|(?i:md|mich|minn)|M(?i:iss)|(?i:mo|mont|neb|nev|okla)"
        "|O(?i:re)|P(?i:a)|(?i:penn|tenn)|T(?i:ex)|(?i:va|vt)|W(?i:ash)|(?i:wisc?|wyo)"
    )
    # 3.4.1's lists: later CoreNLP versions moved "Dept" here from ABCOMP2 and added "ft" to ABNUM
    ABCOMP = "(?i:inc|cos?|corp)|(?i:pp?t)[ye](?i:s)?|(?i:ltd|plc|rt|bancorp|bhd|assn|univ|intl|sys)"
    ABNUM = "(?i:tel|est|ext|sq)"
    ABPTIT = "(?i:jr|sr|bros|(?:ed|ph)\\.d|esq|blvd|rd)"
    ABBREV1 = f"(?:{ABMONTH}|{ABDAYS}|{ABSTATE}|{ABCOMP}|{ABNUM}|{ABPTIT}|(?i:etc|al|seq|bldg))\\."
    ABTITLE = (
        "(?i:mr|mrs|ms)|M(?i:iss)|(?i:drs?|profs?|sens?|reps?|attys?|lt|col|gen|messrs|govs?|adm|rev"
        "|maj|sgt|cpl|pvt|mt|capt|ste?|ave|pres|lieut|hon|brig|co?mdr|pfc|spc|supts?|det|ft|adj|adv"
        "|asst|assoc|ens|insp|mlle|mme|msgr|sfc)"
    )
    ABCOMP2 = "(?i:invt|elec|natl)|(?i:m)[ft](?i:g)|(?i:dept)"
    # ACRO_ first: it subsumes the one-letter case and its leftmost-first match is the longest
    ABBREV4 = f"(?:{ACRO_}|{ABTITLE}|(?i:vs|alex|wm|jos|cie|a\\.k\\.a|cf|treas|ph)|{ABCOMP2})"
    ABBREV2 = f"{ABBREV4}\\."
    ABBREV3 = "(?i:ca|figs?|prop|nos?|art|bldg|pp|op)\\."
    ACRONYM = f"{ACRO_}\\."
    SENT_WORDS = "|".join(
        w[0] + (f"(?i:{re.escape(w[1:])})" if len(w) > 1 else "")
        for w in (
            "About According Additionally After An A As At But Earlier He Her Here However If In It "
            "Last Many More Mr. Ms. Now Once One Other Our She Since So Some Such That The Their "
            "Then There These They This We When While What Yet You"
        ).split()
    )
    PHONE1 = (
        "(?:\\([0-9]{2,3}\\)[ \u00A0]?|(?:\\+\\+?)?(?:[0-9]{2,4}[\\- \u00A0])?[0-9]{2,4}[\\- \u00A0])"
        "[0-9]{3,4}[\\- \u00A0]?[0-9]{3,5}"
    )
    PHONE2 = "(?:(?:\\+\\+?)?[0-9]{2,4}\\.)?[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}"
    DBLQUOT = '"|(?i:&quot;)'
    LDOTS = "\\.{3,5}|(?:\\.[ \u00A0]){2,4}\\.|[\u0085\u2026]"
    INSENTP = "[,;:\u3001]"
    SENTP = "[.\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]"
    QUOTES1 = "['\u0092\u2019&`\u2018\u201A\u201B\u201C\u201D\u0091\u0093\u0094\u201E\u201F\u2039\u203A\u00AB\u00BB]"
    QUOTES = (
        "''|[`\u2018\u2019\u201A\u201B\u201C\u201D\u0091\u0092\u0093\u0094\u201E\u201F"
        f"\u2039\u203A\u00AB\u00BB]{{1,2}}|{APOS}"
    )
    TBSPEC = (
        "(?i:-(?:rrb|lrb|rcb|lcb|rsb|lsb)-|c\\.d\\.s|pro-|anti-|s(?:&|&amp;)p-500|s(?:&|&amp;)ls)"
        f"|(?i:cap){APOS}(?i:n)|(?i:c){APOS}(?i:est)"
    )
    TBSPEC2 = f"{APOS}[0-9][0-9]"
    SMILEY = "[<>]?[:;=][\\-o*']?[()DPdpO\\\\{@|\\[\\]]"
    ASIANSMILEY = (
        "[\\^x=~<>]\\.\\[\\^x=~<>]|[\\-\\^x=~<>']_[\\-\\^x=~<>']"
        "|\\([\\-\\^x=~<>'][_.]?[\\-\\^x=~<>']\\)|\\([\\^x=~<>']-[\\^x=~<>'`]\\)"
    )
    MISCSYMBOL = (
        "[+%&~\\^|\\\\\u00A6\u00A7\u00A8\u00A9\u00AC\u00AE\u00AF\u00B0-\u00B3\u00B4-\u00BA\u00D7\u00F7"
        "\u0387\u05BE\u05C0\u05C3\u05C6\u05F3\u05F4\u0600-\u0603\u0606-\u060A\u060C\u0614\u061B"
        "\u061E\u066A\u066D\u0703-\u070D\u07F6\u07F7\u07F8\u0964\u0965\u0E4F\u1FBD\u2016\u2017"
        "\u2020-\u2023\u2030-\u2038\u203B\u203E-\u2042\u2044\u207A-\u207F\u208A-\u208E\u2100-\u214F"
        "\u2190-\u21FF\u2200-\u2BFF\u3012\u30FB\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65]"
    )

    AP1 = "['\u0092\u2019&]"  # first char of APOS
    LET1 = f"(?:{L}|&)"
    NUM1 = f"(?:{D}|[.:,\u00AD\u066B\u066C])"
    ANY = None
    # (regex, trailing context or None, action, class of possible first characters or None).
    # Top-level alternatives whose leftmost-first match might not be the longest are split
    # into consecutive rules: JFlex compares lengths across them exactly as across rules.
    R: list[RuleSpec] = [
        ("(?i:c\\+\\+|[cf]#)", None, None, "[cCfF]"),
        ("(?i:cannot|'twas)", None, _push(3), "[cC']"),
        ("(?i:'tis|gonna|gotta|lemme|gimme|wanna)", None, _push(2), "['gGlLwW]"),
        (SGML, None, _nbsp, "<"),
        ("(?i:&(?:md|mdash|ndash);)|[\u0096\u0097\u2013\u2014\u2015]", None, _const("--"),
         "[&\u0096\u0097\u2013\u2014\u2015]"),
        ("(?i:&amp;)", None, _const("&"), "&"),
        ("(?i:&(?:ht|tl|ur|lr|qc|ql|qr|odq|cdq|#[0-9]+);)", None, None, "&"),
        (WORD, REDAUX, _remove_soft_hyphens, LET1),
        (SWORD, SREDAUX, _remove_soft_hyphens, "[A-Za-z\u00AD]"),
        (WORD, None, _remove_soft_hyphens, LET1),
    ]
    R += [(alt, None, None, f"(?:{A}|{AP1})") for alt in APOWORD.split("|\x00")]
    R += [
        ("(?i:y)" + APOS, A, None, "[yY]"),
        ("(?i:https?)" + FULLURL, None, None, "[hH]"),
        # With and without the path, as two rules: the optional path's leftmost-first match
        # can be shorter than the longest ("www./.om/.plate": host "/.om/." then "plat")
        (LIKELYURL_WWW + URLPATH, None, None, "[wW]"),
        (LIKELYURL_WWW, None, None, "[wW]"),
        (LIKELYURL_DOM + URLPATH, None, None, ANY),
        (LIKELYURL_DOM, None, None, ANY),
        (EMAIL, None, None, "[<&a-zA-Z0-9]"),
        (TWITTER, None, None, "[@#]"),
        (REDAUX, "[^A-Za-z]", _right_quotes, AP1),
        (SREDAUX, "[^A-Za-z]", _right_quotes, "[nN]"),
        (DATE, None, None, D),
        (NUMBER, None, _remove_soft_hyphens, f"(?:{NUM1}|[-+])"),
        (SUBSUPNUM, None, None, "[\u207A\u207B\u208A\u208B\u2070\u00B9\u00B2\u00B3\u2074-\u2079\u2080-\u2089]"),
        (FRAC, None, _nbsp, D),
        (FRAC2, None, _norm_fraction, FRAC2),
        (TBSPEC, None, _norm_amp, "[-cCpPaAsS]"),
        (THING3, None, None, "[A-Za-z0-9]"),
        (DOLSIGN, None, None, "[A-Z$#]"),
        (DOLSIGN2, None, _norm_currency, DOLSIGN2),
        # SPACENLS in 3.4.1: the space run may hold line breaks, so with -preserveLines a
        # caption ending in "x." is split when the NEXT line starts with "The", "A", ...
        (ACRONYM, f"{SPNL}+(?:{SENT_WORDS}|{SGML}){SPNL}", ACRO, "[A-Za-z]"),
        (ABBREV3, f"{SPNL}?{D}", None, "[A-Za-z]"),
        (ABBREV1, "(?s:..)", None, "[A-Za-z]"),
        (ABBREV1, None, None, "[A-Za-z]"),
        (ABBREV2, None, None, "[A-Za-z]"),
        (ABBREV4, SP, None, "[A-Za-z]"),
        (ACRO_, SPNL, None, "[A-Za-z]"),
        (TBSPEC2, SPNL, None, AP1),
        (FILENAME, f"{SPNL}|[.?!,]", None, f"(?:{LET1}|{D})"),
        (WORD + "\\.", INSENTP, _remove_soft_hyphens, LET1),
        (PHONE1, None, _phone, "[(+0-9]"),
        (PHONE2, None, _phone, "[+0-9]"),
        (DBLQUOT, "[A-Za-z0-9$]", _left_quotes, '["&]'),
        (DBLQUOT, None, _right_quotes, '["&]'),
        ("\\x7f", None, SKIP, "\\x7f"),
        ("<|(?i:&lt;)", None, _const("<"), "[<&]"),
        (">|(?i:&gt;)", None, _const(">"), "[>&]"),
        (SMILEY, "[^A-Za-z0-9]", _parens, "[<>:;=]"),
        (ASIANSMILEY, None, _parens, "[\\^x=~<>'(\\-]"),
        ("\\{", None, _const("-LCB-"), "\\{"),
        ("\\}", None, _const("-RCB-"), "\\}"),
        ("\\[", None, _const("-LSB-"), "\\["),
        ("\\]", None, _const("-RSB-"), "\\]"),
        ("\\(", None, _const(_OPEN_PAREN), "\\("),
        ("\\)", None, _const(_CLOSE_PAREN), "\\)"),
        ("-+", None, _hyphens, "-"),
        (LDOTS, None, _const("..."), "[.\u0085\u2026]"),
        ("@+|#+|_+", None, None, "[@#_]"),
        ("\\*+|(?:\\\\\\*){1,3}", None, None, "[*\\\\]"),
        (INSENTP, None, None, INSENTP),
        ("[?!]+", None, None, "[?!]"),
        (SENTP, None, None, SENTP),
        ("=", None, None, "="),
        ("/", None, None, "/"),
        (HTHING + "\\.", INSENTP, _remove_soft_hyphens, "[A-Za-z0-9]"),
        (HTHING, None, _remove_soft_hyphens, "[A-Za-z0-9]"),
        (THING + "\\.", INSENTP, None, AD),
        (THING, None, None, AD),
        (THINGA + "\\.", INSENTP, _norm_amp, "[A-Z]"),
        (THINGA, None, _norm_amp, "[A-Z]"),
        ("'", "[A-Za-z][^ \\t\\n\\r\u00A0]", _left_quotes, "'"),
        (REDAUX, None, _right_quotes, AP1),
        (SREDAUX, None, _right_quotes, "[nN]"),
        (QUOTES, None, _right_quotes, QUOTES1),
        ("<<|>>", None, None, "[<>]"),
        (MISCSYMBOL, None, None, MISCSYMBOL),
        (f"\\x00|{SP}+|[\u200B\u200E\u200F\uFEFF]", None, SKIP, f"(?:{SP}|[\\x00\u200B\u200E\u200F\uFEFF])"),
        ("\\r\\n|" + NLCH, None, SKIP, NLCH),
        ("(?i:&nbsp;)", None, SKIP, "&"),
        ("(?s:.)", None, SKIP, ANY),  # "Untokenizable": CoreNLP logs it and drops it
    ]
    return R


class _Rule:
    """One rule; its regex is compiled when first tried (``match`` replaces itself), because
    compiling the whole grammar is most of the cost of a first call that lexes a few captions."""

    __slots__ = ("pattern", "match", "has_trail", "action", "first")
    match: Callable[[str, int], re.Match[str] | None]

    def __init__(self, pattern: str, trail: str | None, action, first: str | None) -> None:
        self.pattern = pattern if trail is None else f"(?:{pattern})(?=({trail}))"
        self.match = self._compile_and_match
        self.has_trail = trail is not None
        self.action = action
        self.first = re.compile(first) if first is not None else None

    def _compile_and_match(self, s: str, pos: int) -> re.Match[str] | None:
        self.match = re.compile(self.pattern).match
        return self.match(s, pos)


@lru_cache(maxsize=2)
def _compiled(ascii_only: bool = False) -> tuple[_Rule, ...]:
    return tuple(_Rule(*r) for r in _rules(ascii_only))


_CANDIDATES: dict[tuple[str, bool], tuple[_Rule, ...]] = {}


#: The non-ASCII characters that a caseless ASCII letter matches (see _rules): a rule whose
#: first-character class takes the letter may start with them too.
_CASELESS_TWINS = {"\u0130": "iI", "\u0131": "iI", "\u017f": "sS", "\u212a": "kK"}


def _candidates(ch: str, ascii_only: bool = False) -> tuple[_Rule, ...]:
    """The rules whose match can start with ``ch``, in grammar order (cached per character)."""
    cand = _CANDIDATES.get((ch, ascii_only))
    if cand is None:
        probes = ch + _CASELESS_TWINS.get(ch, "")
        cand = tuple(r for r in _compiled(ascii_only) if r.first is None or any(map(r.first.match, probes)))
        if len(_CANDIDATES) < 8192:
            _CANDIDATES[ch, ascii_only] = cand
    return cand


# A run of ASCII letters that ends at a space or at the end of the text is one token, itself,
# unless it is one of the words the grammar splits: no rule but WORD, ABBREV4 and ACRO_ can match
# such a run (the others need a digit, an apostrophe, a period, "&", "+", "-", "/", "<", "@" ...),
# none can go on across the space (the rules that match spaces begin with a digit, "(", "+", "<"
# or "."), and the trailing contexts of ABBREV4 (a space) and ACRO_ (a space or line break) win
# the length comparison but consume the same run and keep it as it is. Taking such runs at once
# skips trying ~40 rules at most positions of a caption.
# Greedy, not possessive (see capeval.text.ptb): giving back letters never satisfies the lookahead.
_LETTER_RUN = re.compile(r"[A-Za-z]+(?= |\n\Z)")
_SPLIT_RUNS = frozenset(("cannot", "gonna", "gotta", "lemme", "gimme", "wanna"))


def lex(
    text: str,
    *,
    following: str = "\n",
    prefilter: bool = True,
    ascii_rules: bool = True,
    letter_runs: bool = True,
) -> list[str]:
    """PTB tokens of one line, before lower-casing and the coco punctuation filter.

    ``following`` is what comes after ``text`` in the jar's input: by default a newline, as
    after every caption but the last of a batch (some trailing contexts look at it); ``"\n"``
    plus the next lines to reproduce a caption inside a batch exactly, ``""`` for the last
    line of a file. No token reaches past ``text``: no rule consumes a line break.
    ``prefilter=False`` tries every rule at every position (a check on the first-character
    classes, used by the tests); ``letter_runs=False`` lexes letter runs by the rules too
    (a check on the shortcut described at ``_LETTER_RUN``).
    """
    # ASCII text is lexed with the rules compiled from ASCII classes (same matches, see
    # _ASCII_CLASSES); ascii_rules=False forces the full ones (the tests compare both).
    s = text + following
    ascii_only = ascii_rules and s.isascii()
    all_rules = _compiled(ascii_only)
    n = len(text)
    pos = 0
    out: list[str] = []
    run = _LETTER_RUN.match if letter_runs and prefilter else None
    while pos < n:
        if run is not None:
            m = run(s, pos)
            if m is not None:
                tok = m.group()
                if tok.lower() not in _SPLIT_RUNS:
                    out.append(tok)
                    pos = m.end()
                    continue
        best = None
        best_len = 0
        best_end = pos
        for rule in _candidates(s[pos], ascii_only) if prefilter else all_rules:
            m = rule.match(s, pos)
            if m is None:
                continue
            total = m.end(1) if rule.has_trail else m.end()
            if total > best_len:
                best, best_len, best_end = rule, total, m.end()
        if best is None or best_end == pos:  # unreachable: the last rule takes any one char
            pos += 1
            continue
        tok = s[pos:best_end]
        action = best.action
        if action is None:
            out.append(tok)
        elif callable(action):
            out.append(action(tok))
        elif action is SKIP:
            pass
        elif action is ACRO:
            if len(tok) == 2:
                out.append(tok[0])
                best_end -= 1
            else:
                out.append(tok)
        else:  # ("push", k)
            best_end -= action[1]
            out.append(s[pos:best_end])
        pos = best_end
    return out


if __name__ == "__main__":  # pragma: no cover - manual probe
    for line in sys.stdin:
        print(" ".join(lex(line.rstrip("\n"))))
