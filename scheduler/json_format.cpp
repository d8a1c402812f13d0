#include "scheduler/json_format.hpp"

#include "scheduler/errors.hpp"
#include "scheduler/file_access.hpp"
#include "scheduler/op_kinds.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace gridflow {
namespace {

using nlohmann::json;

std::string type_text(const json& j) {
  switch (j.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return fmt::format("boolean {}", j.dump());
  case json::value_t::string:
    return fmt::format("string {}", j.dump());
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return fmt::format("integer {}", j.dump());
  case json::value_t::number_float:
    return fmt::format("number {}", j.dump());
  case json::value_t::array:
    return "an array";
  case json::value_t::object:
    return "an object";
  default:
    return "something else";
  }
}

// A position in the document: the source name and the JSON path, for error messages.
class Node {
public:
  Node(const json& j, std::string source, std::string path)
      : j_(j), source_(std::move(source)), path_(std::move(path)) {}

  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(std::string_view why) const {
    throw GraphError(fmt::format("{}: {}: {}", source_, path_.empty() ? "(top level)" : path_, why));
  }

  Node key(std::string_view k) const { return {j_.at(std::string(k)), source_, join(std::string(k))}; }
  Node index(std::size_t i) const { return {j_.at(i), source_, fmt::format("{}[{}]", path_, i)}; }
  bool has(std::string_view k) const { return j_.contains(std::string(k)); }

  const json::object_t& object() const {
    if (!j_.is_object())
      fail("expected an object, got " + type_text(j_));
    return j_.get_ref<const json::object_t&>();
  }
  const json::array_t& array() const {
    if (!j_.is_array())
      fail("expected an array, got " + type_text(j_));
    return j_.get_ref<const json::array_t&>();
  }
  std::string string() const {
    if (!j_.is_string())
      fail("expected a string, got " + type_text(j_));
    return j_.get<std::string>();
  }
  bool boolean() const {
    if (!j_.is_boolean())
      fail("expected true or false, got " + type_text(j_));
    return j_.get<bool>();
  }
  double number() const {
    if (!j_.is_number())
      fail("expected a number, got " + type_text(j_));
    return j_.get<double>();
  }
  std::int64_t integer() const {
    if (j_.is_number_unsigned() &&
        j_.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail("integer too large: " + j_.dump());
    if (!j_.is_number_integer())
      fail("expected an integer, got " + type_text(j_));
    return j_.get<std::int64_t>();
  }
  std::uint64_t unsigned_integer() const {
    if (!j_.is_number_unsigned() && !(j_.is_number_integer() && j_.get<std::int64_t>() >= 0))
      fail("expected a non-negative integer, got " + type_text(j_));
    return j_.get<std::uint64_t>();
  }

  // Every key must be one of `allowed`; `context` says what the object is ("a reduce task").
  void only_keys(std::initializer_list<std::string_view> allowed, std::string_view context) const {
    only_keys(std::span<const std::string_view>(allowed.begin(), allowed.size()), context);
  }
  void only_keys(std::span<const std::string_view> allowed, std::string_view context) const {
    for (const auto& [k, v] : object()) {
      bool ok = false;
      for (std::string_view a : allowed)
        ok = ok || a == k;
      if (!ok) {
        std::string list;
        for (std::string_view a : allowed)
          list += fmt::format("{}'{}'", list.empty() ? "" : ", ", a);
        Node(v, source_, join(k)).fail(fmt::format("unknown key for {} (known keys: {})", context, list));
      }
    }
  }
  Node required(std::string_view k, std::string_view context) const {
    if (!has(k))
      fail(fmt::format("{} needs the key '{}'", context, k));
    return key(k);
  }

private:
  std::string join(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const json& j_;
  std::string source_;
  std::string path_;
};

template <class E> E parse_enum(const Node& n, std::optional<E> (*parse)(std::string_view), std::string_view choices) {
  const std::string s = n.string();
  const std::optional<E> e = parse(s);
  if (!e)
    n.fail(fmt::format("\"{}\" is not one of {}", s, choices));
  return *e;
}

Init parse_init(const Node& n) {
  const auto& obj = n.object();
  if (obj.size() != 1)
    n.fail("init takes exactly one of 'uniform', 'iota', 'constant', 'file'");
  n.only_keys({"uniform", "iota", "constant", "file"}, "an init");
  if (n.has("uniform")) {
    const Node u = n.key("uniform");
    u.only_keys({"low", "high", "seed"}, "a uniform init");
    InitUniform v;
    if (u.has("low"))
      v.low = u.key("low").number();
    if (u.has("high"))
      v.high = u.key("high").number();
    if (u.has("seed"))
      v.seed = u.key("seed").unsigned_integer();
    return v;
  }
  if (n.has("iota")) {
    const Node io = n.key("iota");
    io.only_keys({"start", "step"}, "an iota init");
    InitIota v;
    if (io.has("start"))
      v.start = io.key("start").number();
    if (io.has("step"))
      v.step = io.key("step").number();
    return v;
  }
  if (n.has("constant"))
    return InitConstant{n.key("constant").number()};
  return InitFile{n.key("file").string()};
}

Buffer parse_buffer(const Node& n) {
  n.only_keys({"name", "dtype", "shape", "init", "save"}, "a buffer");
  Buffer b;
  b.name = n.required("name", "a buffer").string();
  b.dtype = parse_enum<DType>(n.required("dtype", "a buffer"), &parse_dtype, "\"f32\", \"i32\"");
  const Node shape = n.required("shape", "a buffer");
  for (std::size_t i = 0; i < shape.array().size(); ++i)
    b.shape.push_back(shape.index(i).integer());
  if (n.has("init"))
    b.init = parse_init(n.key("init"));
  if (n.has("save"))
    b.save = n.key("save").string();
  return b;
}

ViewSpec parse_view(const Node& n) {
  if (n.raw().is_string())
    return ViewSpec(n.string());
  n.only_keys({"buffer", "offset", "length", "rows", "cols"}, "a view");
  ViewSpec v(n.required("buffer", "a view").string());
  if (n.has("offset"))
    v.offset = n.key("offset").integer();
  if (n.has("length"))
    v.length = n.key("length").integer();
  if (n.has("rows"))
    v.rows = n.key("rows").integer();
  if (n.has("cols"))
    v.cols = n.key("cols").integer();
  return v;
}

Task parse_task(const Node& n) {
  Task t;
  static const std::string op_choices = [] {
    std::string s;
    for (const OpKindTraits& k : all_kinds())
      s += fmt::format("{}\"{}\"", s.empty() ? "" : ", ", to_string(k.kind));
    return s;
  }();
  t.op = parse_enum<OpKind>(n.required("op", "a task"), &parse_op_kind, op_choices);
  const OpKindTraits& kind = kind_traits(t.op);
  const std::string context = fmt::format("a {} task", to_string(t.op));
  std::vector<std::string_view> allowed = {"name", "op", "in", "out", "after"};
  for (const OpKey& k : kind.keys)
    allowed.push_back(k.name);
  n.only_keys(allowed, context);
  for (const OpKey& k : kind.keys)
    if (k.required)
      (void)n.required(k.name, context);
  if (kind.rows_only)
    t.axis = Axis::row;
  // The option keys (only those of the op's row passed only_keys).
  if (n.has("fn")) {
    const Node fn = n.key("fn");
    if (!kind.set_fn(t, fn.string()))
      fn.fail(fmt::format("\"{}\" is not one of {}", fn.string(), kind.fn_choices));
  }
  if (n.has("exclusive"))
    t.exclusive = n.key("exclusive").boolean();
  if (n.has("log"))
    t.log = n.key("log").boolean();
  if (n.has("cmp"))
    t.cmp = parse_enum<CmpFn>(n.key("cmp"), &parse_cmp_fn, "\"gt\", \"ge\", \"lt\", \"le\", \"eq\", \"ne\"");
  if (n.has("threshold"))
    t.threshold = n.key("threshold").number();
  if (n.has("scale"))
    t.scale = n.key("scale").number();
  if (n.has("shift"))
    t.shift = n.key("shift").number();
  if (n.has("lo"))
    t.lo = n.key("lo").number();
  if (n.has("hi"))
    t.hi = n.key("hi").number();
  if (kind.aux_key != nullptr)
    t.aux = parse_view(n.key(kind.aux_key));
  t.name = n.required("name", "a task").string();
  if (n.has("axis"))
    t.axis = parse_enum<Axis>(n.key("axis"), &parse_axis, "\"all\", \"row\"");
  t.in = parse_view(n.required("in", "a task"));
  t.out = parse_view(n.required("out", "a task"));
  if (n.has("after")) {
    const Node after = n.key("after");
    for (std::size_t i = 0; i < after.array().size(); ++i)
      t.after.push_back(after.index(i).string());
  }
  return t;
}

std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// Builds the document from the parser's events, refusing what nlohmann's own builder accepts silently: a key that
// appears twice in one object (last-wins there) and nesting deeper than any graph needs. Parse errors (number
// overflow included) keep their byte position, for line and column.
class StrictBuilder final : public nlohmann::json_sax<json> {
public:
  static constexpr std::size_t kMaxDepth = 64;

  explicit StrictBuilder(json& root) : root_(root) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    json& object = *levels_.back().value;
    if (object.contains(k)) {
      error_ = fmt::format("{}: duplicate key '{}' (each key may appear once)", path_text(k), printable(k));
      return false;
    }
    levels_.back().key = k;
    pending_ = &object[k];
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string why = ex.what();
    if (const auto p = why.find("parse error"); p != std::string::npos)
      why = why.substr(p);
    else if (const auto q = why.find("] "); q != std::string::npos)
      why = why.substr(q + 2);
    error_position_ = position;
    error_ = why;
    return false;
  }

  // Empty while the document is good; else what went wrong, and (parse errors) the byte it went wrong at.
  const std::string& error() const { return error_; }
  std::optional<std::size_t> error_position() const { return error_position_; }

private:
  struct Level {
    json* value;
    std::string name; // as its parent calls it: "[3]" or "key"
    std::string key;  // objects: the key being read
  };

  json* place(json&& v, std::string& name) {
    if (levels_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *levels_.back().value;
    if (top.is_array()) {
      top.push_back(std::move(v));
      name = fmt::format("[{}]", top.size() - 1);
      return &top.back();
    }
    name = levels_.back().key;
    *pending_ = std::move(v);
    return pending_;
  }
  bool put(json&& v) {
    std::string name;
    place(std::move(v), name);
    return true;
  }
  bool open(json&& v) {
    if (levels_.size() >= kMaxDepth) {
      error_ = fmt::format("{}: nesting deeper than {} levels", path_text({}), kMaxDepth);
      return false;
    }
    std::string name;
    json* at = place(std::move(v), name);
    levels_.push_back({at, std::move(name), {}});
    return true;
  }
  bool close() {
    levels_.pop_back();
    return true;
  }
  // "tasks[2].in" (+ ".key"), as Node paths read; "(top level)" for the root.
  std::string path_text(const std::string& key) const {
    std::string s;
    for (std::size_t i = 1; i < levels_.size(); ++i)
      s += levels_[i].name.front() == '[' || s.empty() ? printable(levels_[i].name) : "." + printable(levels_[i].name);
    if (!key.empty())
      s += s.empty() ? printable(key) : "." + printable(key);
    return s.empty() ? "(top level)" : s;
  }

  json& root_;
  std::vector<Level> levels_;
  json* pending_ = nullptr;
  std::string error_;
  std::optional<std::size_t> error_position_;
};

json view_json(const ViewSpec& v) {
  if (v.offset == 0 && !v.length && !v.rows && !v.cols)
    return v.buffer;
  json j = {{"buffer", v.buffer}};
  if (v.offset != 0)
    j["offset"] = v.offset;
  if (v.length)
    j["length"] = *v.length;
  if (v.rows)
    j["rows"] = *v.rows;
  if (v.cols)
    j["cols"] = *v.cols;
  return j;
}

} // namespace

namespace {

Graph parse_graph(std::string_view text, std::string_view source) {
  json doc;
  StrictBuilder builder(doc);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder);
  if (!ok || !builder.error().empty()) {
    if (const auto at = builder.error_position()) {
      const auto [line, col] = line_column(text, *at == 0 ? 0 : *at - 1);
      throw GraphError(fmt::format("{}:{}:{}: malformed JSON: {}", printable(source), line, col, builder.error()));
    }
    throw GraphError(fmt::format("{}: {}", printable(source), builder.error()));
  }
  const Node root(doc, std::string(source), "");
  root.only_keys({"gridflow", "name", "buffers", "tasks"}, "a graph");
  const std::int64_t version = root.required("gridflow", "a graph (the format version)").integer();
  if (version != kJsonFormatVersion)
    root.key("gridflow")
        .fail(fmt::format("format version {} is not supported (this gridflow reads {})", version, kJsonFormatVersion));
  Graph g(root.has("name") ? root.key("name").string() : "graph");
  const Node buffers = root.required("buffers", "a graph");
  for (std::size_t i = 0; i < buffers.array().size(); ++i)
    g.add_buffer(parse_buffer(buffers.index(i)));
  const Node tasks = root.required("tasks", "a graph");
  for (std::size_t i = 0; i < tasks.array().size(); ++i)
    g.add_task(parse_task(tasks.index(i)));
  return g;
}

} // namespace

Graph graph_from_json(std::string_view text, std::string_view source) {
  try {
    return parse_graph(text, source);
  } catch (const json::exception& e) { // a value the strict reader let through but nlohmann refused
    throw GraphError(fmt::format("{}: {}", printable(source), e.what()));
  }
}

Graph load_graph(const std::filesystem::path& path) {
  return graph_from_json(read_graph_file(path, kMaxGraphFileBytes), path.string());
}

std::string graph_to_json(const Graph& g, int indent) {
  json doc = {
      {"gridflow", kJsonFormatVersion}, {"name", g.name()}, {"buffers", json::array()}, {"tasks", json::array()}};
  for (const Buffer& b : g.buffers()) {
    json jb = {{"name", b.name}, {"dtype", to_string(b.dtype)}, {"shape", b.shape}};
    if (const auto* u = std::get_if<InitUniform>(&b.init))
      jb["init"] = {{"uniform", {{"low", u->low}, {"high", u->high}, {"seed", u->seed}}}};
    else if (const auto* io = std::get_if<InitIota>(&b.init))
      jb["init"] = {{"iota", {{"start", io->start}, {"step", io->step}}}};
    else if (const auto* c = std::get_if<InitConstant>(&b.init))
      jb["init"] = {{"constant", c->value}};
    else if (const auto* f = std::get_if<InitFile>(&b.init))
      jb["init"] = {{"file", f->path}};
    else if (std::holds_alternative<InitHost>(b.init))
      throw_buffer_error(b.name, "init", "host data", "cannot be written as JSON: save it to a file and use init.file");
    if (!b.save.empty())
      jb["save"] = b.save;
    doc["buffers"].push_back(std::move(jb));
  }
  for (const Task& t : g.tasks()) {
    const OpKindTraits& kind = kind_traits(t.op);
    json jt = {{"name", t.name}, {"op", to_string(t.op)}};
    for (const OpKey& k : kind.keys) {
      if (k.name == "fn")
        jt["fn"] = kind.fn_name(t);
      else if (k.name == "axis" && !kind.rows_only)
        jt["axis"] = to_string(t.axis);
      else if (k.name == "exclusive")
        jt["exclusive"] = t.exclusive;
      else if (k.name == "log")
        jt["log"] = t.log;
      else if (k.name == "cmp")
        jt["cmp"] = to_string(t.cmp);
      else if (k.name == "threshold")
        jt["threshold"] = t.threshold;
      else if (k.name == "scale")
        jt["scale"] = t.scale;
      else if (k.name == "shift")
        jt["shift"] = t.shift;
      else if (k.name == "lo" && t.lo)
        jt["lo"] = *t.lo;
      else if (k.name == "hi" && t.hi)
        jt["hi"] = *t.hi;
      else if (kind.aux_key != nullptr && k.name == kind.aux_key)
        jt[std::string(k.name)] = view_json(t.aux);
    }
    jt["in"] = view_json(t.in);
    jt["out"] = view_json(t.out);
    if (!t.after.empty())
      jt["after"] = t.after;
    doc["tasks"].push_back(std::move(jt));
  }
  return doc.dump(indent) + (indent >= 0 ? "\n" : "");
}

} // namespace gridflow
