"""Plain-language captions for each panel (Markdown), at the level of a good explainer post."""
from __future__ import annotations

CAPTIONS: dict[str, str] = {
    "intro": (
        "Type a prompt and watch a real language model answer it. Each panel below shows one stage of "
        "its work for the token on screen, with the numbers the model actually computed: how text is cut "
        "into tokens, where the tokens sit in embedding space, what each attention head looks at, which "
        "next tokens the model considered and how sampling chose one, and how the KV cache grows. "
        "Drag the step slider to go back in time."
    ),
    "output": (
        "The model writes one token at a time: each step reads the whole context so far, scores every "
        "token in its vocabulary, and picks one, which is appended to the context for the next step. "
        "Hover over a coloured piece to see which step produced it and how likely it was."
    ),
    "tokens": (
        "A model never sees letters or words, only tokens: pieces of text from a fixed vocabulary, each "
        "with an id number. In chat mode the text is first wrapped in the model's chat template, with "
        "special tokens marking whose turn it is, so the model reads more than you typed. Different "
        "models cut the same text differently, as the comparison below shows."
    ),
    "embeddings": (
        "Each token id selects a row of the model's embedding matrix: a long vector of numbers "
        "(hundreds of dimensions) that is the model's starting point for that token. Here those vectors "
        "are flattened to 2D by a fixed projection (PCA), so nearby points had similar starting vectors; "
        "much of the structure is lost in 2D, so treat distances as a rough hint."
    ),
    "attention": (
        "Attention is how a token gathers information from earlier tokens: in every layer, each head "
        "gives each earlier position a weight, and the weights of a row add up to 1. A token can only "
        "look back, never ahead, so the upper triangle is empty. With grouped-query attention several "
        "query heads share one key/value head, which makes the KV cache smaller."
    ),
    "distribution": (
        "The model's last layer gives a score (logit) to every token in the vocabulary; softmax turns "
        "the scores into probabilities. Temperature divides the scores before softmax (below 1 sharpens, "
        "above 1 flattens, 0 always takes the top token); top-k keeps only the k most likely tokens; "
        "top-p keeps the smallest set of most likely tokens whose probability adds up to at least p. "
        "The token is then drawn at random from what is left."
    ),
    "kv": (
        "The first step (prefill) processes the whole prompt in one parallel pass and stores every "
        "position's keys and values in the KV cache. Each later step (decode) feeds only the newest "
        "token: it computes just that token's keys and values and reuses the cached ones, so the cache "
        "grows by a fixed amount per token, and each decode step is much cheaper than re-reading the "
        "whole context."
    ),
    "speculative": (
        "Decoding makes one token per forward pass of the big model. In speculative decoding a cheap draft guesses k "
        "tokens ahead, and the big model checks all k in one pass: each guess is kept with probability min(1, p/q) "
        "(p: the big model's probability, q: the draft's); at the first rejection a token is drawn from what the big "
        "model wanted more than the draft, max(0, p − q). This rule makes the text exactly as likely as if the big model "
        "had written it alone; only the speed changes. Hover over a token to see its test."
    ),
}
