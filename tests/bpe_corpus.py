#!/usr/bin/env python3
"""A seeded test corpus for the byte-level BPE tokenizer (tests/test_bpe_corpus.py):
prose, source code, numbers, white-space runs, contractions, CJK, right-to-left
scripts, emoji and combining marks, mixed line by line, from the seed texts
below (every character assigned in Unicode 14, the version of our tables).

    python3 tests/bpe_corpus.py OUT [--bytes N] [--seed S]
"""
import random
import sys

WORDS = ("the of and to in is was he for it with as his on be at by had are but from or have an they which "
         "one you were her all she there would their we him been has when who will more no if out so said what "
         "up its about into than them can only other new some could time these two may then do first any my now "
         "such like our over man me even most made after also did many before must through back years where much "
         "your way well down should because each just those people Mr how too little state good very make world "
         "still own see men work long get here between both life being under never day same another know while "
         "last might us great old year off come since against go came right used take three").split()
CONTRACTIONS = ["don't", "it's", "I'm", "we'll", "they've", "she'd", "you're", "IT'S", "WE'LL", "They'Re",
                "o'clock", "rock'n'roll", "'tis", "ma'am", "DON'T", "he'S", "we'Ve", "I'D", "y'all", "'s", "'LL",
                "'ſ", "aſ'ſ", "'x", "''", "'", "' s", "'re'", "Ol'", "’s"]
CODE = [
    "def main(argv):\n    return 0 if argv else -1\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i] * b[i];\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }\n",
    "    if x == None:\n        raise ValueError(f'bad {x!r}')\n",
    "const f = (a, b) => a ?? b; // ok\r\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;\n",
    "<div class=\"x\">&nbsp;</div>\n",
    "x = [1,2,3]; y = {'a': 1, \"b\": 2.5e-3}\n",
    "    \t  \n\n\n    return;\n",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }\n",
    "$ ls -la /usr/bin | grep -v '^d' >> out.txt 2>&1\n",
    "a=b+c*d/e-f%g^h|i&j~k!l@m#n\n",
]
NUMBERS = ["0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "1,000,000", "-17", "+3", "0x1F",
           "1e10", "2024-12-01", "12:30:45", "100%", "$9.99", "٠١٢٣٤٥", "१२३४", "²³", "½", "Ⅻ", "①②", "๓๔",
           "１２３", "٣.١٤"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", "  \n  ", "\u00a0",
          "\u3000", "\u2003", " \u00a0 ", "\u2028", "\x0b", "\x0c", "\r", " \t \n", "        ", "\n\n\n\n"]
SCRIPTS = [
    "你好，世界。今天天气很好，我们去公园散步吧！",
    "東京は日本の首都です。ひらがなとカタカナ、漢字を使います。",
    "안녕하세요, 세계! 한국어 문장입니다.",
    "مرحبا بالعالم، هذه جملة عربية.",
    "שלום עולם, זה משפט בעברית.",
    "Привет, мир! Это русское предложение.",
    "Γειά σου Κόσμε! Αυτή είναι μια ελληνική πρόταση.",
    "नमस्ते दुनिया, यह हिंदी वाक्य है।",
    "สวัสดีชาวโลก นี่คือประโยคภาษาไทย",
    "Xin chào thế giới, đây là câu tiếng Việt.",
    "Ḩëľŀö ŵőŕłđ ñ ç ß ø å æ œ ŉ ǅ",
    "e\u0301 a\u0300 o\u0308 n\u0303 A\u030a \u0301 \u0301\u0301x",
    "ﷺ ﷲ ﬁ ﬂ Ａ Ｂ ｶﾀｶﾅ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝 𝟙𝟚𝟛",
]
EMOJI = ["🎉", "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🏳️‍🌈", "❤️", "✨", "🤖", "🙂🙃", "☃", "⌘", "©", "™", "→", "∑∫√∞"]
PUNCT = [".", ",", "!", "?", ";", ":", "...", "—", "–", "-", "(", ")", "[", "]", "\"", "«", "»", "“", "”",
         "¿", "¡", "*", "/", "&", "@", "#", "%", "_", "~", "`", "|", "\\", "<|endoftext|>", "<|im_end|>"]


def sentence(r):
    words = []
    for _ in range(r.randint(3, 16)):
        k = r.random()
        if k < 0.70:
            w = r.choice(WORDS)
            words.append(w.capitalize() if r.random() < 0.1 else w.upper() if r.random() < 0.02 else w)
        elif k < 0.78:
            words.append(r.choice(CONTRACTIONS))
        elif k < 0.86:
            words.append(r.choice(NUMBERS))
        elif k < 0.92:
            words.append(r.choice(PUNCT))
        else:
            words.append(r.choice(EMOJI))
    out = ""
    for w in words:
        out += (r.choice(SPACES) if r.random() < 0.1 else " ") + w if out else w
    return out + r.choice([".", "!", "?", "", ";"])


def chunk(r):
    k = r.random()
    if k < 0.40:
        return " ".join(sentence(r) for _ in range(r.randint(1, 4))) + r.choice(["\n", "\n\n", " ", "\r\n"])
    if k < 0.55:
        return r.choice(CODE)
    if k < 0.75:
        s = r.choice(SCRIPTS)
        if r.random() < 0.5:  # a random slice: pieces start and end anywhere
            a = r.randrange(len(s))
            s = s[a:a + r.randint(1, 20)]
        return s + r.choice(SPACES)
    if k < 0.85:
        return "".join(r.choice(SPACES + NUMBERS) for _ in range(r.randint(1, 8)))
    if k < 0.95:
        return "".join(r.choice(EMOJI + PUNCT + SPACES + CONTRACTIONS) for _ in range(r.randint(1, 8)))
    return r.choice(WORDS) * r.randint(1, 30) + r.choice(SPACES) * r.randint(1, 12)


def corpus(nbytes=1 << 20, seed=20):
    r = random.Random(seed)
    parts, size = [], 0
    while size < nbytes:
        c = chunk(r)
        parts.append(c)
        size += len(c.encode("utf-8"))
    return "".join(parts)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=20)
    a = ap.parse_args()
    with open(a.out, "w", encoding="utf-8", newline="") as f:
        f.write(corpus(a.bytes, a.seed))
    sys.exit(0)
