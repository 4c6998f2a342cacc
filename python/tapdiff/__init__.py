"""Write tapdiff dumps from an engine outside tapdiff.

    from tapdiff import DumpWriter
    with DumpWriter("mine.h5", model="model.gguf", engine="metal", compute_dtype="f16") as dump:
        with dump.chunk(prompt_tokens[:64]) as chunk:
            chunk.record(0, "q_proj", q)        # [rows, width], layer 0
            ...
        dump.finish(generated=[...])

`tapdiff compare ref.h5 mine.h5 --model model.gguf` then compares it with tapdiff's reference and
names the culprit op (docs/bisect.md). The layout is docs/dump-format.md.

HfRecorder records a Hugging Face transformers model's run the same way, from hooks
(tapdiff/hf_recorder.py); MlxRecorder an mlx-lm model's, by wrapping its modules
(tapdiff/mlx_recorder.py).
"""
from .dump_writer import DumpWriter, model_info
from .hf_recorder import HfRecorder
from .mlx_recorder import MlxRecorder

__all__ = ["DumpWriter", "HfRecorder", "MlxRecorder", "model_info"]
