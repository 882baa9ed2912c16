"""The words a newcomer meets on the page, in plain words: one home for them, read by the page's captions
(a dotted underline whose hover or tap says what the word means) and written out in docs/glossary.md
(a test checks that the two agree)."""
from __future__ import annotations

import html
import re

GLOSSARY: dict[str, str] = {
    "token": "A piece of text the model reads or writes: a word, part of a word, a space or a sign. "
             "Each token has an id number in the model's vocabulary.",
    "vocabulary": "Every token the model knows, each with its id number.",
    "context": "All the tokens the model reads at a step: the prompt (with its chat template) and everything written so far.",
    "step": "One round of writing: the model reads the context and adds one token. Step 0 writes the first token.",
    "logit": "The raw score the model's last layer gives each token of the vocabulary; higher means likelier.",
    "softmax": "The formula that turns scores (logits) into probabilities that add up to 1.",
    "probability": "How likely a token is to come next, from 0 (never) to 1 (certainly); 49% is 0.49.",
    "temperature": "Divides the scores before softmax: below 1 makes the likeliest tokens likelier still, above 1 "
                   "evens the chances; 0 always takes the top token (greedy).",
    "top-k": "Keeps only the k likeliest tokens and draws among them; 0 keeps all.",
    "top-p": "Keeps the fewest likeliest tokens whose probabilities add up to at least p, and draws among them; 1 keeps all.",
    "greedy": "Always taking the likeliest token: the same prompt then always gives the same text.",
    "sampled": "Drawn at random, each token as likely as its probability says (after the sampling settings: temperature, top-k, top-p, min-p, the repetition penalty).",
    "entropy": "How unsure the model is, in bits: 0 when one token is certain, higher when many tokens are about as likely.",
    "parameters": "The numbers the model learned in training (its weights).",
    "layer": "One of the model's stacked blocks; each one reads every token's vector and adds to it.",
}
_TERM = re.compile(r"\b(" + "|".join(re.escape(t) for t in sorted(GLOSSARY, key=len, reverse=True)) + r")s?\b", re.IGNORECASE)


def gloss(text: str) -> str:
    """`text` (Markdown or HTML, no tags inside the words) with the first use of each glossary word marked:
    <abbr class="term" title="its meaning">word</abbr>."""
    seen: set[str] = set()

    def mark(m: re.Match) -> str:
        key = m.group(1).lower()
        if key in seen:
            return m.group(0)
        seen.add(key)
        return f'<abbr class="term" title="{html.escape(GLOSSARY[key])}">{m.group(0)}</abbr>'

    return _TERM.sub(mark, text)


def glossary_markdown() -> str:
    """docs/glossary.md's list: each word and its meaning, in alphabetical order."""
    return "\n".join(f"- **{term}**: {GLOSSARY[term]}" for term in sorted(GLOSSARY)) + "\n"
