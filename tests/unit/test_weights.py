"""How the weights are stored is read from the files, never assumed."""
import torch

from pipeline.loading import load_model
from tests import tiny


def test_a_saved_float32_model_says_float32_safetensors(tmp_path):
    tiny.model("llama").save_pretrained(tmp_path)
    tiny.tokenizer().save_pretrained(tmp_path)
    lm = load_model(str(tmp_path), residual_map=False)
    assert lm.info.weights == "float32 safetensors"
    # the file holds 4 bytes a weight (plus a small JSON header), tied or not
    assert lm.info.n_params * 4 <= lm.info.weight_bytes < lm.info.n_params * 4 + 64_000


def test_a_bfloat16_file_is_named_as_such(tmp_path):
    tiny.model("llama").to(torch.bfloat16).save_pretrained(tmp_path)
    tiny.tokenizer().save_pretrained(tmp_path)
    lm = load_model(str(tmp_path), residual_map=False)
    assert lm.info.weights == "BF16 safetensors, computed in float32"
    assert lm.info.weight_bytes < lm.info.n_params * 4 * 0.6


def test_a_model_made_in_memory_says_so():
    assert tiny.loaded("llama").info.weights == "float32 in memory (not read from a file)"
