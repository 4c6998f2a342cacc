#pragma once
// The culprit from engine B's dump alone: each op that B's dump holds, with all of its inputs, is
// run by the reference on B's own inputs read from the dump (attention on B's dumped K and V rows
// of every earlier position, appended chunk by chunk as B ran them), and B's output is measured
// against it: B's own, local error, as `tapdiff bisect` measures it on A's inputs. The first op
// past its tolerance is the culprit. A floor engine (the reference in B's precision) on the same
// inputs calibrates each op's tolerance, as in bisect.
//
// B's rows run in B's chunks (/rows/chunk), at their places in the token stream
// (aligned_positions: a run that restarted its positions is checked at the positions it should
// have used). Each layer depends only on B's dump, so a range of layers can be checked alone.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/compare/tolerances.h"
#include "dumps/dump_reader.h"
#include "model/engine.h"
#include "model/graph.h"

namespace tapdiff::bisect {

// Whose inputs an op's local error was measured on: A's (tapdiff bisect runs B's ops on them) or
// B's own, read from its dump (compare --model).
enum class LocalInputs : std::uint8_t { a, b_own };
std::string_view local_inputs_text(LocalInputs inputs);  // "A's inputs", "B's own inputs"

struct LocalCheckEngines {
  model::Engine& truth;  // the reference in f64
  model::Engine* floor;  // the reference in B's precision (calibrated mode); null: none
};

struct LocalCheckOptions {
  Tolerances tolerances;
  model::Precision precision = model::Precision::f32;      // B's: what tolerance rules match, and the floor's
  std::optional<Calibration> calibration = Calibration{};  // needs a floor engine
  int first_layer = -1;  // the layers checked: embed is -1, final_norm and logits n_layers
  int last_layer = 1 << 30;
  std::function<void(int chunk, int chunks)> progress;  // after each of B's chunks, when set
};

// An op of B's dump that cannot be checked: the taps it reads that the dump lacks.
struct Undecidable {
  model::TensorId id;
  std::vector<model::TensorId> missing;
};

struct LocalCheck {
  std::vector<OpResult> local;  // graph order: every op checked
  std::vector<RowInfo> rows;    // B's rows, at their places in the stream
  std::vector<Undecidable> undecidable;
  std::optional<std::size_t> culprit;  // index into local of the first op past its tolerance

  // Index into local of the comparison's symptom (its first op past tolerance), when it was checked.
  std::optional<std::size_t> symptom_of(const CompareResult& run) const;
  // The taps whose absence left ops undecidable, "LAYER/OP" each, sorted, once each.
  std::vector<std::string> missing_taps() const;
};

// UsageError naming B's file when its rows do not hold every position from 0 on (the reference
// needs the whole KV cache), or when no op in the layers can be checked.
LocalCheck check_locally(const dumps::DumpReader& b, const model::Graph& graph, LocalCheckEngines engines,
                         const LocalCheckOptions& options);

}  // namespace tapdiff::bisect
