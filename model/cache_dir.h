#pragma once
// Where tapdiff keeps what it can make again (synth models, remembered model hashes).
#include <filesystem>

namespace tapdiff::model {

// $TAPDIFF_CACHE_DIR, else $XDG_CACHE_HOME/tapdiff, else $HOME/.cache/tapdiff, else
// <temp>/tapdiff-cache. Not created here.
std::filesystem::path cache_dir();

}  // namespace tapdiff::model
