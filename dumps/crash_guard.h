#pragma once
// Reading files that libhdf5 may not survive. libhdf5 1.10 trusts parts of a file that the format
// gives no checksum (global heap object sizes, chunk index nodes), so a damaged file can crash it
// or make it loop forever; run_in_child does such a read first in a child process, so that a
// crash or a hang becomes an error of the file, not of tapdiff. The child of a process with other
// threads may find a lock held forever by a thread it does not have: read such files before
// starting threads (engines, model hashing).
#include <functional>
#include <string>

namespace tapdiff::dumps {

// Seconds without a heartbeat after which the child counts as looping.
inline constexpr int kStallSeconds = 20;

// Runs work(heartbeat) in a forked child process; work calls heartbeat() now and then to show it
// is not looping. Returns once the child ends by itself, whether or not work threw (the caller
// repeats the work to learn what it throws). FormatError("<path>: corrupt dump: ...") when the
// child dies by a signal, or goes kStallSeconds without a heartbeat (it is killed then);
// EnvironmentError when no child process can be made. The child ends with _exit: it writes nothing
// of the parent's (stdio buffers, HDF5 files) and runs no exit handler.
void run_in_child(const std::string& path, const std::function<void(const std::function<void()>&)>& work);

}  // namespace tapdiff::dumps
