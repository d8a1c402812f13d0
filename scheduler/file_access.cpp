#include "scheduler/file_access.hpp"

#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace gridflow {
namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

const char* kind_of(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISLNK(mode))
    return "a symbolic link";
  return "of an unknown kind";
}

// The path of `given` relative to `root`, refused (through `fail`) when it leaves `root` lexically.
template <class Fail>
fs::path resolve(const FilePolicy& policy, const fs::path& root, const std::string& given, Fail fail) {
  const fs::path p(given);
  if (given.empty())
    fail("needs a path");
  if (!policy.allow_outside) {
    if (p.is_absolute())
      fail(fmt::format("is an absolute path: paths are relative to the folder {} (--allow-outside-paths allows others)",
                       root.string()));
    const fs::path n = p.lexically_normal();
    if (!n.empty() && *n.begin() == "..")
      fail(fmt::format("leaves the folder {} (--allow-outside-paths allows it)", root.string()));
  }
  return p.is_absolute() ? p : root / p;
}

// True when `inner` is `outer` or below it (both canonical).
bool is_within(const fs::path& outer, const fs::path& inner) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end() || (std::next(o) == outer.end() && o->empty()); // a trailing separator on `outer`
}

// When links may not leave `root`: the canonical form of `path` must lie within the canonical root.
template <class Fail>
void check_within(const FilePolicy& policy, const fs::path& root, const fs::path& path, Fail fail) {
  if (policy.allow_outside)
    return;
  std::error_code ec, ec_root;
  const fs::path real = fs::canonical(path, ec);
  const fs::path real_root = fs::canonical(root, ec_root);
  if (ec)
    fail(fmt::format("cannot resolve {}: {}", path.string(), ec.message()));
  if (ec_root)
    fail(fmt::format("cannot resolve the folder {}: {}", root.string(), ec_root.message()));
  if (!is_within(real_root, real))
    fail(fmt::format("leads through a link to {}, outside the folder {} (--allow-outside-paths allows it)",
                     real.string(), root.string()));
}

class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

private:
  int fd_;
};

} // namespace

InputFile::InputFile(InputFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), size_(o.size_), path_(std::move(o.path_)) {}

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
    path_ = std::move(o.path_);
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

void InputFile::read_all(void* dst, std::uint64_t bytes, std::string_view what) const {
  auto* out = static_cast<char*>(dst);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, std::uint64_t{1} << 30));
    const ssize_t got = ::pread(fd_, out + done, chunk, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      throw RuntimeError(fmt::format("{}: reading {} failed: {}", what, path_, errno_text(errno)));
    if (got == 0)
      throw RuntimeError(fmt::format("{}: {} ended after {} of {} bytes", what, path_, done, bytes));
    done += static_cast<std::uint64_t>(got);
  }
}

InputFile open_init_file(const FilePolicy& policy, std::string_view buffer, const std::string& given) {
  auto fail = [&](std::string_view why) -> void {
    throw_buffer_error(buffer, "init.file", fmt::format("\"{}\"", given), why);
  };
  const fs::path full = resolve(policy, policy.input_dir, given, fail);
  // Look before opening, so a FIFO or a device is never opened; then check what was opened.
  struct stat ls {};
  if (::lstat(full.c_str(), &ls) != 0)
    fail(fmt::format("cannot open {}: {}", full.string(), errno_text(errno)));
  if (!S_ISREG(ls.st_mode) && !S_ISLNK(ls.st_mode))
    fail(fmt::format("{} is {}, not a regular file", full.string(), kind_of(ls.st_mode)));
  Fd fd(::open(full.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0)
    fail(fmt::format("cannot open {}: {}", full.string(), errno_text(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    fail(fmt::format("cannot stat {}: {}", full.string(), errno_text(errno)));
  if (!S_ISREG(st.st_mode))
    fail(fmt::format("{} is {}, not a regular file", full.string(), kind_of(st.st_mode)));
  if (!policy.allow_outside) {
    check_within(policy, policy.input_dir, full, fail);
    // The file opened is the one checked (not swapped for a link meanwhile).
    struct stat real {};
    if (::stat(fs::canonical(full).c_str(), &real) != 0 || real.st_dev != st.st_dev || real.st_ino != st.st_ino)
      fail(fmt::format("{} changed while it was opened", full.string()));
  }
  return InputFile(fd.release(), static_cast<std::uint64_t>(st.st_size), full.string());
}

fs::path check_save_target(const FilePolicy& policy, std::string_view buffer, const std::string& given) {
  auto fail = [&](std::string_view why) -> void {
    throw_buffer_error(buffer, "save", fmt::format("\"{}\"", given), why);
  };
  const fs::path full = resolve(policy, policy.output_dir, given, fail);
  const fs::path name = full.filename();
  if (name.empty() || name == "." || name == "..")
    fail("names a folder, not a file");
  const fs::path parent = full.parent_path();
  struct stat ps {};
  if (::stat(parent.c_str(), &ps) != 0)
    fail(fmt::format("its folder {} does not exist ({})", parent.string(), errno_text(errno)));
  if (!S_ISDIR(ps.st_mode))
    fail(fmt::format("{} is {}, not a folder", parent.string(), kind_of(ps.st_mode)));
  check_within(policy, policy.output_dir, parent, fail);
  struct stat ls {};
  if (::lstat(full.c_str(), &ls) == 0) {
    if (S_ISLNK(ls.st_mode))
      fail(fmt::format("{} is a symbolic link: saves never follow links", full.string()));
    if (!S_ISREG(ls.st_mode))
      fail(fmt::format("{} is {}, not a regular file", full.string(), kind_of(ls.st_mode)));
    if (!policy.overwrite)
      fail(fmt::format("{} exists (--overwrite replaces it)", full.string()));
  } else if (errno != ENOENT) {
    fail(fmt::format("cannot inspect {}: {}", full.string(), errno_text(errno)));
  }
  return full;
}

fs::path write_save_file(const FilePolicy& policy, std::string_view buffer, const std::string& given, const void* data,
                         std::uint64_t bytes) {
  fs::path full;
  try {
    full = check_save_target(policy, buffer, given);
  } catch (const GraphError& e) {
    throw RuntimeError(e.what()); // the target changed since the run was checked
  }
  auto fail = [&](std::string_view what, int err) {
    throw RuntimeError(fmt::format("buffer '{}': save = \"{}\": {} {}: {}", printable(buffer), printable(given), what,
                                   full.string(), errno_text(err)));
  };
  const int flags =
      O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (policy.overwrite ? 0 : O_EXCL);
  Fd fd(::open(full.c_str(), flags, 0644));
  if (fd.get() < 0)
    fail("cannot create", errno);
  // From here on a failure leaves no partial file behind.
  auto fail_and_remove = [&](std::string_view what, int err) {
    ::close(fd.release());
    ::unlink(full.c_str());
    fail(what, err);
  };
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    fail_and_remove("cannot stat", errno);
  if (!S_ISREG(st.st_mode))
    fail("refused to write into", EINVAL);
  if (policy.overwrite && ::ftruncate(fd.get(), 0) != 0)
    fail_and_remove("cannot truncate", errno);
  const auto* src = static_cast<const char*>(data);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, std::uint64_t{1} << 30));
    const ssize_t put = ::write(fd.get(), src + done, chunk);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      fail_and_remove("writing", put < 0 ? errno : EIO);
    done += static_cast<std::uint64_t>(put);
  }
  if (::fsync(fd.get()) != 0 && errno != EINVAL)
    fail_and_remove("flushing", errno);
  if (::close(fd.release()) != 0) {
    const int err = errno;
    ::unlink(full.c_str());
    fail("closing", err);
  }
  return full;
}

std::string read_graph_file(const fs::path& path, std::uint64_t max_bytes) {
  auto fail = [&](std::string_view why) { throw GraphError(fmt::format("{}: {}", printable(path.string()), why)); };
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0)
    fail(fmt::format("cannot open the graph file: {}", errno_text(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    fail(fmt::format("cannot stat the graph file: {}", errno_text(errno)));
  if (!S_ISREG(st.st_mode))
    fail(fmt::format("the graph file is {}, not a regular file", kind_of(st.st_mode)));
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    fail(fmt::format("the graph file holds {} bytes, more than the limit of {}", st.st_size, max_bytes));
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t got = ::read(fd.get(), text.data() + done, text.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      fail(fmt::format("reading the graph file failed: {}", errno_text(errno)));
    if (got == 0)
      break; // shrank while read: parse what is there
    done += static_cast<std::size_t>(got);
  }
  text.resize(done);
  return text;
}

} // namespace gridflow
