// Dumps and h5py (python3-h5py): h5py reads what DumpWriter writes, and DumpReader reads what a
// writer following docs/dump-format.md with h5py writes. Skipped where h5py is not importable.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "dumps/dump_reader.h"
#include "model/graph.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using dumps::DumpReader;
using dumps::StorageType;
using model::HostTensor;
using model::Op;
using model::TensorId;

// Runs a python script (written to this test's temp folder) with one argument.
CommandResult run_python(const std::string& python, const std::string& script, const std::string& arg) {
  const std::string file = dump_path("script.py");
  std::ofstream(file) << script;
  return run_command(python + " '" + file + "' '" + arg + "'");
}

TEST(DumpH5py, H5pyReadsADump) {
  TAPDIFF_REQUIRE_H5PY(python);
  const std::string path = dump_path("run.h5");
  write_fake_dump(path, StorageType::f16);
  const auto result = run_python(python, R"(
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    cfg = json.loads(f.attrs["model_config"])
    q = f["taps/0/q_proj"]
    n = int(f.attrs["rows_complete"])
    print(json.dumps({
        "schema_version": int(f.attrs["schema_version"]), "engine": f.attrs["engine"],
        "complete": int(f.attrs["complete"]), "rows": n, "q_shape": list(q.shape),
        "q_width": cfg["n_heads"] * cfg["head_dim"], "q_dtype": q.dtype.str,
        "q_attrs": [int(q.attrs["layer"]), q.attrs["op"], q.attrs["class"], q.attrs["kernel"]],
        "q_4_1": float(q[4, 1]), "positions": f["rows/position"][:n].tolist(),
        "decode": f["rows/decode"][:n].tolist(), "prompt": f["prompt_tokens"][:].tolist(),
        "kernels": json.loads(f.attrs["kernels"]), "summary": json.loads(f.attrs["summary"]),
        "layers": sorted(f["taps"].keys(), key=int)}))
)",
                                 path);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json out = nlohmann::json::parse(result.output);
  EXPECT_EQ(out["schema_version"], 1);
  EXPECT_EQ(out["engine"], "fake");
  EXPECT_EQ(out["complete"], 1);
  EXPECT_EQ(out["rows"], 9);
  EXPECT_EQ(out["q_shape"], (nlohmann::json{9, 8}));
  EXPECT_EQ(out["q_width"], 8);
  EXPECT_EQ(out["q_dtype"], "<f2");
  EXPECT_EQ(out["q_attrs"], (nlohmann::json{0, "q_proj", "gemm", "tiled"}));
  EXPECT_EQ(out["q_4_1"].get<double>(), fake_value({Op::q_proj, 0}, 4, 1));
  EXPECT_EQ(out["positions"], (nlohmann::json{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(out["decode"], (nlohmann::json{0, 0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(out["prompt"], nlohmann::json(FakeRun{}.prompt()));
  EXPECT_EQ(out["kernels"]["attn"], "naive");
  EXPECT_EQ(out["summary"]["generated"], (nlohmann::json{4, 6, 8}));
  EXPECT_EQ(out["layers"], (nlohmann::json{"-1", "0", "1", "2"}));
}

// An external writer that follows docs/dump-format.md, as a PyTorch forward hook would.
TEST(DumpH5py, DumpWrittenByH5pyReads) {
  TAPDIFF_REQUIRE_H5PY(python);
  const std::string path = dump_path("pytorch.h5");
  const auto result = run_python(python, R"(
import json, sys, h5py, numpy as np
cfg = {"n_layers": 1, "dim": 4, "n_heads": 2, "n_kv_heads": 1, "head_dim": 2, "ffn_dim": 6, "vocab": 10}
tokens = np.array([3, 1, 4, 1], dtype=np.int32)
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["schema_version"] = 1
    f.attrs["engine"] = "pytorch"
    f.attrs["model_config"] = json.dumps(cfg)
    f.attrs["kernels"] = json.dumps({"attn": "sdpa"})
    f.attrs["storage_dtype"] = "f32"
    f.create_dataset("prompt_tokens", data=tokens)
    f.create_dataset("rows/position", data=np.arange(4))  # int64: any integer type reads
    f.create_dataset("rows/chunk", data=np.zeros(4, dtype=np.int32))
    f.create_dataset("rows/decode", data=np.zeros(4, dtype=np.uint8))
    f.create_dataset("rows/token", data=tokens)
    for layer, op, width in [(-1, "embed", 4), (0, "v_proj", 2), (0, "ffn_residual", 4), (1, "logits", 10)]:
        d = f.create_dataset(f"taps/{layer}/{op}", data=np.arange(4 * width, dtype=np.float32).reshape(4, width) + layer)
        d.attrs["layer"] = layer
        d.attrs["op"] = op
)",
                                 path);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const DumpReader reader(path);
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.rows(), 4);
  EXPECT_EQ(reader.metadata().engine, "pytorch");
  EXPECT_EQ(reader.metadata().kernels.at("attn"), "sdpa");
  EXPECT_EQ(reader.metadata().prompt_tokens, (std::vector<std::int32_t>{3, 1, 4, 1}));
  EXPECT_EQ(reader.positions(), (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(reader.tensors(),
            (std::vector<TensorId>{{Op::embed, -1}, {Op::v_proj, 0}, {Op::ffn_residual, 0}, {Op::logits, 1}}));
  const HostTensor logits = reader.read({Op::logits, 1}, 2, 2);
  ASSERT_EQ(logits.rows(), 2);
  EXPECT_EQ(logits.at(1, 9), 3 * 10 + 9 + 1);
  EXPECT_EQ(reader.read({Op::v_proj, 0}, 0, 4).at(3, 1), 7.0);
}

}  // namespace
}  // namespace tapdiff::testing
