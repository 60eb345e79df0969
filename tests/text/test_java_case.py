"""Java's lower-casing of tokens holding a capital sigma (capeval.text._java_case), against the
JVM itself: ``String.toLowerCase(Locale.ENGLISH)``, as CoreNLP applies it to each token."""
from __future__ import annotations

import random
import subprocess

import pytest

from capeval.text import _java_case, ptb

_LOWER_SOURCE = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
public class Lower {
    public static void main(String[] a) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        for (String line; (line = in.readLine()) != null;) out.println(line.toLowerCase(Locale.ENGLISH));
        out.flush();
    }
}
"""

#: Letters, digits, marks, format characters, the word-break rules' punctuation, kana, kanji,
#: Java's extra cased characters, a letter above U+FFFF.
ALPHABET = list("ΣΣΣΑαAa1٣²Ⅻⅻʰˆ\u0301\u200b\u0345\u037a.'\",-‧\u00ad$#%&¢ \u00a0中アあー・!/_ⓐⒶ\u0903\u0964ǅ") + [
    "\u3099", "\u30fc", "\u2027", "\U0001F600", "\u200e", "\u20dd", "\u203f", "\u4a8d", "\u30fd", "\u309d",
    "\u30fb", "\ue000", "\u3005", "\u3095", "\u1d2c", "\u1d62",
]


def test_sigma_is_final_by_java_word_rule():
    # Python: final after a cased letter, skipping only case-ignorable characters; Java: any
    # cased character in the same word before it, none after it
    assert "ΟΔΟΣ2Α".lower() == "οδος2α" and _java_case.lower("ΟΔΟΣ2Α") == "οδοσ2α"
    assert "A1Σ".lower() == "a1σ" and _java_case.lower("A1Σ") == "a1ς"
    assert _java_case.lower("ΑΣ") == "ας" and _java_case.lower("Σ") == "σ"
    assert ptb.tokenize(["ΟΔΟΣ2Α A1Σ"]) == ["οδοσ2α a1ς"]


def test_tokens_without_sigma_are_str_lower():
    for tok in ["ABC", "İx", "ÀÉ", "ǅ", "Ⅻ", "Ꞵ"]:
        assert _java_case.lower(tok) == tok.lower()


@pytest.mark.java
@pytest.mark.oracle
def test_equals_the_jvm_on_random_tokens(java, tmp_path):
    rng = random.Random(40)
    lines = []
    for _ in range(4000):
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.choice([2, 3, 4, 6, 10])))
        lines.append(s if "Σ" in s else s + "Σ")
    src = tmp_path / "Lower.java"
    src.write_text(_LOWER_SOURCE)
    proc = subprocess.run([java, str(src)], input="\n".join(lines).encode("utf-8"), capture_output=True,
                          timeout=300, check=False)
    if proc.returncode != 0:
        pytest.skip(f"the source launcher needs a JDK: {proc.stderr.decode()[-200:]}")
    want = proc.stdout.decode("utf-8").split("\n")[: len(lines)]
    got = list(map(_java_case.lower, lines))
    # Known: a letter above U+FFFF followed by a mark in the same token (docs/TOKENIZER.md)
    bad = [(s, w, g) for s, w, g in zip(lines, want, got)
           if w != g and not any(c > "\uffff" and c.isalpha() for c in s)]
    assert not bad, bad[:5]
