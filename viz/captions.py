"""Plain-language captions for each panel (Markdown), at the level of a good explainer post."""
from __future__ import annotations

_DIST_DETAIL = (
    "In detail: the model's last layer gives a score (logit) to every token in the vocabulary; softmax turns "
    "the scores into probabilities. Temperature divides the scores before softmax (below 1 sharpens, "
    "above 1 flattens, 0 always takes the top token); top-k keeps only the k most likely tokens; "
    "top-p keeps the smallest set of most likely tokens whose probability adds up to at least p. "
    "The token is then drawn at random from what is left."
)

CAPTIONS: dict[str, str] = {
    "intro": (
        "Type a prompt and watch a real language model answer it. Each panel below shows one stage of "
        "its work for the token on screen, with the numbers the model actually computed: how text is cut "
        "into tokens, where the tokens sit in embedding space, what each attention head looks at, which "
        "next tokens the model considered and how sampling chose one, and how the KV cache grows. "
        "Drag the step slider to go back in time."
    ),
    "output": (
        "The model writes one token at a time, each drawn from its prediction of what comes next (the chart). "
        "Hover over or tap a coloured piece for its step and how likely it was."
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
        "What the model predicts comes next: the longer the bar, the likelier the token. Drag the sliders to "
        "see sampling reshape it. " + _DIST_DETAIL
    ),
    "distribution_app": (  # the app's page: a click on a bar branches there (assets/page.js)
        "What the model predicts comes next: the longer the bar, the likelier the token. Drag the sliders to "
        "see sampling reshape it; click (or tap) a bar to make the model take that token and write on from there. "
        + _DIST_DETAIL
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
        "had written it alone; only the speed changes. The default draft, ngram, is no model at all: it copies the tokens "
        "that followed the last few tokens where they appeared earlier in the text (prompt lookup), which pays off when the "
        "reply repeats, fixes or reformats its input. Hover over a token to see its test."
    ),
    "inside": (
        "The panels above show what goes in and what comes out; this section opens the model itself. Each token's "
        "vector flows up through a stack of identical blocks (layers), and every block adds to it: an attention part "
        "that mixes in information from earlier tokens and a feed-forward part that works on each position alone. "
        "The last vector is turned into a score for every token in the vocabulary."
    ),
    "lens": (
        "The logit lens asks: what would the model predict if it stopped after this layer? It applies the model's own "
        "final normalisation and output layer to the vector at each depth. Early layers often give a vague or odd "
        "guess, and the final answer tends to take shape in the later layers; the last row is exactly the model's "
        "real prediction. The intermediate rows are a rough probe, since the layers were never trained to be read this way."
    ),
    "residual": (
        "Each position carries one vector, the residual stream, from the embedding to the output. A block does not "
        "replace it: it computes an update and adds it on, so the stream is a running sum of everything the layers have "
        "contributed. This path shows how the vector for the current position changes from layer to layer."
    ),
    "contributions": (
        "In every layer the attention part and the feed-forward (MLP) part each add an update to the residual stream. "
        "Attention is the only place where information moves between positions; the feed-forward part works on each "
        "position on its own and holds most of each layer's parameters. The bars compare the size (norm) of the two "
        "updates per layer; a bigger update is a bigger change, not necessarily a more important one."
    ),
    "position": (
        "Attention by itself does not know the order of tokens, so the order has to be put in. Older models such as GPT-2 add a "
        "learned vector for each position to the token's embedding; most recent models use rotary position embeddings "
        "(RoPE), which rotate each query and key by an angle that grows with its position, so attention scores depend "
        "on how far apart two tokens are. Swapping two tokens of the prompt changes the attention pattern and can "
        "change the prediction."
    ),
    "kv_compare": (
        "The KV cache is a shortcut, not an approximation. Here the same step is computed twice: once feeding only the "
        "new token and reusing the cached keys and values, and once recomputing the whole context from scratch. The "
        "logits should agree up to tiny floating-point differences and pick the same token (the table below says whether "
        "they did); at a decode step the cached pass does a small fraction of the work. At the prefill step there is "
        "nothing cached yet, so both passes are the same."
    ),
    "accounting": (
        "In a dense model every step reads all of the weights once and multiplies them with the tokens it processes. Prefill "
        "processes the whole prompt in one pass, so each weight read is reused for many tokens and the speed tends to "
        "be limited by arithmetic (compute-bound). A decode step processes a single token, so it does little arithmetic "
        "per byte read and is usually limited by how fast memory can deliver the weights and the KV cache (memory-bound)."
    ),
    "sampling_compare": (
        "The same scores, different settings: each column applies its own temperature, top-k and top-p to this step's "
        "logits, with the same code that sampled the real token. The bars give the exact probabilities (from the trace's "
        "summary of the rest of the vocabulary when it holds no full logits, a count marked ≈ where it is estimated); beside them, "
        "the share of many random draws that landed on each token, which gets closer to the exact numbers as the number "
        "of draws grows. Lower temperature and tighter filters concentrate the draws on a few tokens; temperature 0 always "
        "gives the top one."
    ),
    "branching": (
        "A generation is one path through many possible ones. Click a candidate token to force it at this step and let "
        "the model continue from there with the same settings; the result is kept as a branch next to the original, so "
        "you can compare how one different token changes what follows."
    ),
    "bytes": (
        "Tokens stand for bytes, not letters. Text is stored as UTF-8, where a character takes one to four bytes, and a "
        "token can end in the middle of a character: an emoji's four bytes may be split over two tokens. The program "
        "holds back the bytes of an unfinished character and shows it only once the token that completes it arrives, "
        "which is why some steps release no text at all."
    ),
    "context": (
        "A model can only read a fixed number of tokens at once, its context window: the prompt (with the chat "
        "template), plus everything generated so far, must fit in it. Hosted models are usually billed per token, with "
        "separate prices for input and output tokens, so the same numbers give the cost. In a chat, the earlier turns "
        "are sent again with every new message, so they count as input each time."
    ),
    "tour": (
        "A guided walk through one step, in the order the model does the work: the context is cut into tokens, each "
        "token becomes a vector, the vectors pass through the layers where attention lets them exchange information, "
        "the last vector becomes a score for every token in the vocabulary, and sampling picks one. Then the chosen "
        "token is appended and the next step begins."
    ),
}
