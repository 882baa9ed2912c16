import pytest


@pytest.fixture(scope="session")
def smol():
    """The embedded SmolLM2-135M-Instruct (converted from its GGUF once, then cached)."""
    from pipeline.loading import load_model

    return load_model(None)
