// Where a graph may read and write files. A graph file travels between people, so the paths it names are
// untrusted: by default `init.file` resolves inside the graph file's folder and `save` inside the output folder
// (the working directory, or `--save-dir`); absolute paths, `..` escapes and links that leave those folders are
// refused, as are FIFOs, devices, sockets and directories; an existing file is never replaced without `overwrite`.
// Every check is made on what is actually opened (lstat before open, fstat after, the opened file's canonical path),
// and every read and write is checked to its end (short reads, write errors, close). Errors are GraphError (bad
// input, found before anything runs) or RuntimeError (an I/O failure after the run), naming the buffer and path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace gridflow {

struct FilePolicy {
  std::filesystem::path input_dir = ".";  // init.file paths are relative to it (the graph file's folder)
  std::filesystem::path output_dir = "."; // save paths are relative to it (the working directory or --save-dir)
  bool allow_outside = false;             // absolute paths, `..` and links may leave the two folders
  bool overwrite = false;                 // a save may replace an existing regular file
};

// A regular file opened for reading (move-only; closes itself).
class InputFile {
public:
  InputFile() = default;
  InputFile(int fd, std::uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&& o) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly `bytes` bytes from the start; throws RuntimeError (naming `what`) on a short read or an error.
  void read_all(void* dst, std::uint64_t bytes, std::string_view what) const;

private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string path_;
};

// Opens buffer `buffer`'s init file `given` under `policy`. Throws GraphError naming the buffer, the field
// (init.file) and the path when the path leaves the input folder, names something that is not a regular file,
// or cannot be opened.
InputFile open_init_file(const FilePolicy& policy, std::string_view buffer, const std::string& given);

// Checks that buffer `buffer` may be saved to `given` under `policy` (called before a run): inside the output
// folder, whose parent folder exists, and not an existing file unless `overwrite` (never a link, FIFO, device or
// directory). Returns the path the save will write. Throws GraphError naming the buffer, `save` and the path.
std::filesystem::path check_save_target(const FilePolicy& policy, std::string_view buffer, const std::string& given);

// Writes `bytes` bytes to buffer `buffer`'s save target `given` (checked again, then created exclusively or, with
// `overwrite`, truncated), checking every write, the flush to disk and the close. On failure the partial file is
// removed and RuntimeError names the buffer and the path.
std::filesystem::path write_save_file(const FilePolicy& policy, std::string_view buffer, const std::string& given,
                                      const void* data, std::uint64_t bytes);

// Reads a whole graph file: a regular file (FIFOs, devices and directories are refused without blocking) of at
// most `max_bytes` bytes. Throws GraphError naming the path.
std::string read_graph_file(const std::filesystem::path& path, std::uint64_t max_bytes);

inline constexpr std::uint64_t kMaxGraphFileBytes = std::uint64_t{256} << 20;

} // namespace gridflow
