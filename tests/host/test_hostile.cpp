// The hostile-input corpus (tests/hostile/cases.json, written by tests/hostile/make_cases.py) against the CLI: every
// case runs the real `gridflow` binary in a fresh folder tree (the graph's folder, the working directory, a folder
// outside both holding a "secret"), and must end with its exit code, print an error matching its pattern, never print
// a raw control character, finish within the time limit (no hang), run nothing when refused, and create or change
// exactly the files it lists, nothing else anywhere in the tree.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr auto kTimeLimit = std::chrono::seconds(30);

json load_cases() {
  std::ifstream in(GRIDFLOW_SOURCE_DIR "/tests/hostile/cases.json");
  return json::parse(in)["cases"];
}

const json& cases() {
  static const json all = load_cases();
  return all;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// Everything under `root`: kind, size, contents (regular files) or target (links), keyed by relative path.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> s;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    const fs::file_status st = it->symlink_status();
    std::string what;
    if (fs::is_symlink(st))
      what = "link " + fs::read_symlink(it->path()).string();
    else if (fs::is_regular_file(st))
      what = "file " + slurp(it->path());
    else if (fs::is_directory(st))
      what = "dir";
    else
      what = "other";
    s[rel.string()] = what;
  }
  return s;
}

// The tree every case starts from (make_cases.py's docstring describes it).
void build_tree(const fs::path& root) {
  fs::create_directories(root / "in" / "dir.bin");
  fs::create_directories(root / "work" / "sub");
  fs::create_directories(root / "outside");
  std::string floats(32, '\0');
  for (int i = 0; i < 8; ++i) {
    const float v = static_cast<float>(i) * 0.5f;
    std::memcpy(&floats[static_cast<std::size_t>(i) * 4], &v, 4);
  }
  put(root / "in" / "x32.bin", floats);
  put(root / "outside" / "secret.bin", std::string(32, 's'));
  put(root / "outside" / "target.bin", std::string(8, 't'));
  put(root / "work" / "exists.bin", std::string(8, 'e'));
  put(root / "work" / "afile", "a regular file");
  fs::create_symlink("x32.bin", root / "in" / "link_in.bin");
  fs::create_symlink("../outside/secret.bin", root / "in" / "link_out.bin");
  fs::create_symlink("../outside/target.bin", root / "work" / "link_save.bin");
  ASSERT_EQ(::mkfifo((root / "in" / "fifo.bin").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((root / "work" / "fifo_out.bin").c_str(), 0644), 0);
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct Outcome {
  int code = -1;
  bool hung = false;
  std::string out, err;
};

// Runs the CLI with `args` in `cwd`, stdout and stderr into files beside (not inside) the tree.
Outcome run_cli(const std::vector<std::string>& args, const fs::path& cwd, const fs::path& io, long fsize_limit) {
  const fs::path out_path = io.string() + ".out", err_path = io.string() + ".err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0)
      ::_exit(126);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
      ::_exit(126);
    if (fsize_limit > 0) {
      const rlimit r{static_cast<rlim_t>(fsize_limit), static_cast<rlim_t>(fsize_limit)};
      ::setrlimit(RLIMIT_FSIZE, &r);
    }
    std::vector<char*> argv;
    std::string cli = GRIDFLOW_CLI_PATH;
    argv.push_back(cli.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(cli.c_str(), argv.data());
    ::_exit(127);
  }
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid)
      break;
    if (std::chrono::steady_clock::now() - start > kTimeLimit) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      o.hung = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  fs::remove(out_path);
  fs::remove(err_path);
  return o;
}

bool has_raw_control(const std::string& s) {
  for (char c : s)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      return true;
  return false;
}

class Hostile : public ::testing::TestWithParam<std::size_t> {};

TEST_P(Hostile, RefusedCleanlyOrRunsCorrectly) {
  const json& c = cases()[GetParam()];
  const std::string name = c["name"];
  const fs::path root =
      fs::temp_directory_path() / ("gridflow_hostile_" + std::to_string(::getpid()) + "_" + std::to_string(GetParam()));
  fs::remove_all(root);
  build_tree(root);

  const fs::path graph_file = root / "in" / "g.json";
  if (c.contains("graph"))
    put(graph_file, c["graph"].dump());
  else if (c.contains("graph_text"))
    put(graph_file, c["graph_text"].get<std::string>());
  else if (c.contains("graph_hex"))
    put(graph_file, from_hex(c["graph_hex"]));
  std::string graph_arg = graph_file.string();
  if (c.contains("graph_arg")) {
    const std::string a = c["graph_arg"];
    graph_arg = a.front() == '/' ? a : (root / a).string();
  }
  std::vector<std::string> args;
  for (const json& a : c["args"])
    args.push_back(a == "{graph}" ? graph_arg : a.get<std::string>());

  const auto before = snapshot(root);
  const Outcome o = run_cli(args, root / "work", root.string() + ".io", c.value("fsize_limit", 0L));
  const auto after = snapshot(root);

  EXPECT_FALSE(o.hung) << name << ": still running after the time limit";
  EXPECT_EQ(o.code, c["exit"].get<int>()) << name << "\nstdout: " << o.out << "\nstderr: " << o.err;
  EXPECT_TRUE(std::regex_search(o.err, std::regex(c["stderr"].get<std::string>())))
      << name << ": stderr does not match /" << c["stderr"].get<std::string>() << "/\nstderr: " << o.err;
  EXPECT_FALSE(has_raw_control(o.err) || has_raw_control(o.out)) << name << ": a raw control character was printed";
  if (c["exit"] == 2) {
    EXPECT_EQ(o.out.find("run: "), std::string::npos) << name << ": refused, yet it ran\n" << o.out;
  }

  std::set<std::string> changed;
  for (const auto& [path, what] : after) {
    const auto it = before.find(path);
    if (it == before.end() || it->second != what)
      changed.insert(path);
  }
  for (const auto& [path, what] : before)
    if (!after.count(path))
      changed.insert(path + " (removed)");
  std::set<std::string> expected;
  for (const json& w : c["writes"])
    expected.insert(w.get<std::string>());
  EXPECT_EQ(changed, expected) << name << ": files created or changed differ from the case's list";
  fs::remove_all(root);
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string s = cases()[info.param]["name"];
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Hostile, ::testing::Range<std::size_t>(0, cases().size()), case_name);

TEST(HostileCorpus, HasAtLeast150Cases) {
  EXPECT_GE(cases().size(), 150u);
}

} // namespace
