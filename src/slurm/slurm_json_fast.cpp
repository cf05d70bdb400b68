// `squeue --json` and `sinfo --json` with simdjson's on-demand parser: one pass over the document,
// no tree. At 100,000 jobs Slurm 22.05 prints 239 MiB; a DOM (nlohmann) took 9-13 s and 5 GB per
// cycle. Each job object's fields are read as views into the parser's buffer and a SlurmJob is
// built only for the jobs the filter wants. Shapes of several Slurm versions are accepted: plain
// numbers (22.05) or {"set": true, "number": N} (23.02+), a string or a list for job_state.
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <memory>

#include "slurm/json_list_splitter.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"

namespace llmwatch {
namespace {

using simdjson::ondemand::json_type;
using simdjson::ondemand::value;

std::optional<std::int64_t> number_of(value v) {
  json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == json_type::number) {
    std::int64_t i;
    if (!v.get_int64().get(i)) return i;
    // A number written as a float, or too long for 64 bits: only one within 64 bits is a number
    // here (casting one beyond is undefined; the fuzzer found a 100-digit time).
    double d;
    if (v.get_double().get(d) || !(d >= -9.2e18 && d <= 9.2e18)) return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  if (t == json_type::object) {
    std::optional<std::int64_t> number;
    bool set = true;
    simdjson::ondemand::object o;
    if (v.get_object().get(o)) return std::nullopt;
    for (auto field : o) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return std::nullopt;
      value fv;
      if (field.value().get(fv)) return std::nullopt;
      if (key == "set") {
        bool b;
        if (!fv.get_bool().get(b)) set = b;
      } else if (key == "number") {
        number = number_of(fv);
      }
    }
    return set ? number : std::nullopt;
  }
  return std::nullopt;
}

// A string, or a list's first string (newer Slurm); "" otherwise.
std::string_view string_of(value v) {
  json_type t;
  if (v.type().get(t)) return {};
  std::string_view s;
  if (t == json_type::string) return v.get_string().get(s) ? std::string_view() : s;
  if (t == json_type::array) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a)) return {};
    for (auto element : a) {
      value e;
      if (element.get(e)) return {};
      return string_of(e);
    }
  }
  return {};
}

// The fields a SlurmJob takes, as they are read (views stay valid until the next parse).
struct RawJob {
  std::optional<std::int64_t> job_id, array_job_id, array_task_id, array_max_tasks, node_count,
      time_limit, submit_time, start_time, restarts;
  std::string_view name, user, group, account, partition, state, reason, reason_detail, nodes,
      required_nodes, batch_host, std_out, std_err, command, workdir, array_task_string, tres_alloc,
      tres_req;
  std::optional<std::string_view> excluded_nodes;  // absent: the document did not say
};

bool read_job(simdjson::ondemand::object job, RawJob& r) {
  for (auto field : job) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return false;
    value v;
    if (field.value().get(v)) return false;
    // Switch on the first letter, then compare: most of ~100 keys are skipped unread.
    if (key == "job_id")
      r.job_id = number_of(v);
    else if (key == "array_job_id")
      r.array_job_id = number_of(v);
    else if (key == "array_task_id")
      r.array_task_id = number_of(v);
    else if (key == "array_max_tasks")
      r.array_max_tasks = number_of(v);
    else if (key == "array_task_string")
      r.array_task_string = string_of(v);
    else if (key == "name")
      r.name = string_of(v);
    else if (key == "user_name")
      r.user = string_of(v);
    else if (key == "group_name")
      r.group = string_of(v);
    else if (key == "account")
      r.account = string_of(v);
    else if (key == "partition")
      r.partition = string_of(v);
    else if (key == "job_state")
      r.state = string_of(v);
    else if (key == "state_reason")
      r.reason = string_of(v);
    else if (key == "state_description")
      r.reason_detail = string_of(v);
    else if (key == "required_nodes")
      r.required_nodes = string_of(v);
    else if (key == "excluded_nodes")
      r.excluded_nodes = string_of(v);
    else if (key == "restart_cnt")
      r.restarts = number_of(v);
    else if (key == "nodes")
      r.nodes = string_of(v);
    else if (key == "batch_host")
      r.batch_host = string_of(v);
    else if (key == "standard_output")
      r.std_out = string_of(v);
    else if (key == "standard_error")
      r.std_err = string_of(v);
    else if (key == "command")
      r.command = string_of(v);
    else if (key == "current_working_directory")
      r.workdir = string_of(v);
    else if (key == "node_count")
      r.node_count = number_of(v);
    else if (key == "time_limit")
      r.time_limit = number_of(v);
    else if (key == "submit_time")
      r.submit_time = number_of(v);
    else if (key == "start_time")
      r.start_time = number_of(v);
    else if (key == "tres_alloc_str")
      r.tres_alloc = string_of(v);
    else if (key == "tres_req_str")
      r.tres_req = string_of(v);
  }
  return true;
}

SlurmJob to_job(const RawJob& r) {
  SlurmJob j;
  j.job_id = *r.job_id;
  j.array_job_id = r.array_job_id.value_or(0);
  j.array_task_id = r.array_task_id;
  j.array_task_string = r.array_task_string;
  j.array_max_tasks = static_cast<int>(r.array_max_tasks.value_or(0));
  j.name = r.name;
  j.user = r.user;
  j.group = r.group;
  j.account = r.account;
  j.partition = r.partition;
  j.state = r.state;
  j.reason = r.reason;
  j.reason_detail = r.reason_detail;
  j.required_nodes = r.required_nodes;
  if (r.excluded_nodes) j.excluded_nodes = std::string(*r.excluded_nodes);
  j.restarts = static_cast<int>(std::clamp<std::int64_t>(r.restarts.value_or(0), 0, 1 << 30));
  j.nodes = r.nodes;
  j.batch_host = r.batch_host;
  j.std_out = r.std_out;
  j.std_err = r.std_err;
  j.command = r.command;
  j.workdir = r.workdir;
  j.node_count = static_cast<int>(r.node_count.value_or(0));
  // What it was given; a pending job has been given nothing yet and counts what it asked for.
  j.gpus = gpus_in_tres(r.tres_alloc.empty() ? r.tres_req : r.tres_alloc);
  j.time_limit_minutes = r.time_limit.value_or(0);
  j.submit_time = r.submit_time.value_or(0);
  j.start_time = r.start_time.value_or(0);
  return j;
}

std::string first_error(simdjson::ondemand::array errors) {
  for (auto e : errors) {
    simdjson::ondemand::object o;
    if (e.get_object().get(o)) return "Slurm reported an error: unspecified";
    std::string what, source;
    for (auto field : o) {
      std::string_view key;
      value v;
      if (field.unescaped_key().get(key) || field.value().get(v)) break;
      if (key == "description") what = string_of(v);
      if (key == "source") source = string_of(v);
    }
    if (!source.empty()) what += " (" + source + ")";
    return "Slurm reported an error: " + (what.empty() ? std::string("unspecified") : what);
  }
  return "";
}

// Walks a Slurm --json document: its `errors` list (with slurmctld down, 22.05 exits 0 with an
// empty list and an error entry: "cannot tell", never "nothing there") and each object of the
// `list` array, handed to `each` (false: the object is malformed). Returns "" or why the
// document cannot be used; a truncated document is an error, never a shorter list. Used for
// what is small: the rest of a document once its list was split off.
template <class Each>
std::string walk_slurm_document(std::string_view text, const std::string& list, Each&& each) {
  simdjson::padded_string padded(text);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(root)) return "not valid JSON";
  bool saw_list = false;
  std::string slurm_error;
  for (auto field : root) {
    std::string_view key;
    value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return "not valid JSON";
    if (key == "errors") {
      simdjson::ondemand::array errors;
      if (!v.get_array().get(errors)) slurm_error = first_error(errors);
      continue;
    }
    if (key != list) continue;
    simdjson::ondemand::array items;
    if (v.get_array().get(items)) return "no \"" + list + "\" list in the JSON";
    saw_list = true;
    for (auto element : items) {
      value item;
      json_type t;
      if (element.get(item) || item.type().get(t)) return "not valid JSON";
      if (t != json_type::object) continue;  // skipped, as the DOM parser did
      simdjson::ondemand::object o;
      if (item.get_object().get(o) || !each(o)) return "not valid JSON";
    }
  }
  if (!saw_list) return "no \"" + list + "\" list in the JSON";
  return slurm_error;
}

}  // namespace

// A Slurm --json document read as it arrives: the list's objects are split off one by one
// (slurm/json_list_splitter.h) and each is parsed on its own, from a zero-padded copy; the
// small rest is walked at the end for Slurm's own errors. Memory: one object, not the
// document (239 MiB at 100,000 jobs) nor simdjson's padded copy and index of it.
struct SlurmListReader {
  simdjson::ondemand::parser parser;
  std::function<bool(simdjson::ondemand::object)> each;
  JsonListSplitter splitter;

  SlurmListReader(const std::string& list, std::function<bool(simdjson::ondemand::object)> fn)
      : each(std::move(fn)), splitter(list, simdjson::SIMDJSON_PADDING, [this](std::string_view t) {
          return element(t);
        }) {}

  bool element(std::string_view text) {
    simdjson::padded_string_view view(text.data(), text.size(),
                                      text.size() + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::document doc;
    simdjson::ondemand::object o;
    if (parser.iterate(view).get(doc) || doc.get_object().get(o)) return false;
    return each(o);
  }

  std::string finish(const std::string& list) {
    if (Status ended = splitter.finish(); !ended)
      return ended.error() == "no output" ? "not valid JSON" : ended.error();
    return walk_slurm_document(splitter.rest(), list, [](simdjson::ondemand::object) {
      return true;  // the list's elements were read already; the rest holds "[]"
    });
  }
};

namespace {

// One node of `sinfo --json`. 22.05 has "state": "idle" plus "state_flags": ["DRAIN"];
// 23.02+ has "state": ["IDLE", "DRAIN"].
bool read_node(simdjson::ondemand::object n, SlurmNode& node) {
  for (auto nf : n) {
    std::string_view k;
    value nv;
    if (nf.unescaped_key().get(k) || nf.value().get(nv)) return false;
    if (k == "name") {
      node.name = string_of(nv);
    } else if (k == "reason") {
      node.reason = string_of(nv);
    } else if (k == "reason_changed_at") {
      node.reason_at = number_of(nv).value_or(0);
    } else if (k == "reason_set_by_user") {
      node.reason_set_by = string_of(nv);
    } else if (k == "address") {
      node.address = string_of(nv);
    } else if (k == "state" || k == "state_flags" || k == "partitions") {
      json_type vt;
      if (nv.type().get(vt)) return false;
      if (vt == json_type::string && k == "state") {
        node.state = string_of(nv);
        continue;
      }
      if (vt != json_type::array) continue;
      simdjson::ondemand::array list;
      if (nv.get_array().get(list)) return false;
      for (auto item : list) {
        std::string_view sv;
        if (item.get_string().get(sv)) continue;
        std::string text(sv);
        if (k == "partitions") {
          node.partitions.push_back(text);
        } else if (k == "state" && node.state.empty()) {
          std::transform(text.begin(), text.end(), text.begin(),
                         [](unsigned char c) { return std::tolower(c); });
          node.state = text;
        } else {
          node.flags.push_back(text);
        }
      }
    }
  }
  return true;
}

}  // namespace

SqueueJsonReader::SqueueJsonReader(const JobFilter* filter)
    : reader_(std::make_unique<SlurmListReader>("jobs", [this,
                                                         filter](simdjson::ondemand::object job) {
        RawJob r;
        if (!read_job(job, r)) return false;
        if (r.job_id && (!filter || filter->wants(r.name, *r.job_id, r.array_job_id.value_or(0))))
          out_.jobs.push_back(to_job(r));
        return true;
      })) {}

SqueueJsonReader::~SqueueJsonReader() = default;

void SqueueJsonReader::feed(std::string_view piece) {
  reader_->splitter.feed(piece);
}

std::size_t SqueueJsonReader::bytes() const {
  return reader_->splitter.bytes();
}

SqueueParse SqueueJsonReader::finish() {
  out_.error = reader_->finish("jobs");
  if (!out_.ok()) out_.jobs.clear();
  return std::move(out_);
}

SqueueParse parse_squeue_json(std::string_view text, const JobFilter* filter) {
  SqueueJsonReader reader(filter);
  reader.feed(text);
  return reader.finish();
}

// `sinfo --json`: 14 MiB at 16,384 nodes, every node kept.
SinfoParse parse_sinfo_json(std::string_view text) {
  SinfoParse out;
  SlurmListReader reader("nodes", [&](simdjson::ondemand::object n) {
    SlurmNode node;
    if (!read_node(n, node)) return false;
    if (!node.name.empty()) out.nodes.push_back(std::move(node));
    return true;
  });
  reader.splitter.feed(text);
  out.error = reader.finish("nodes");
  if (!out.ok()) out.nodes.clear();
  return out;
}

}  // namespace llmwatch
