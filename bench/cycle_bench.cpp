// llmwatch at cluster scale, without the external commands: synthetic squeue/sinfo outputs in
// the exact shapes of tests/fixtures/slurm-22.05.8 (JSON objects cloned from the real capture;
// text in llmwatch's '|' formats), 16,384 nodes, 100,000 jobs, 1,000 watched jobs with logs.
// Prints one table: parse times, a full cycle (parse, evaluate, decide, record) in CPU and
// wall time, peak RSS, SQLite growth per day of cycles, log scanning throughput vs cat.
//
//   llmwatch_bench [--jobs N] [--nodes N] [--watched N] [--format json|text] [--log-mib N]
//                  [--ranks N]  (each watched job's rank 0 summary of N ranks: #28's cost)
//                  [--rewritten K]  (K of every 10 summaries rewritten each cycle; 3. Each at a
//                                    steady cadence, as rank 0 writes it: every 300/K s, the
//                                    jobs' phases spread. With 0, over 20 cycles: the
//                                    summaries are then over 10 min old, stale, and every job
//                                    has a finding saying so)
//                  [--warm N]  (N steady cycles before the measured ones, not measured: a
//                               summary is left unlooked at until due once two rewrites have
//                               shown its cadence, ~10 cycles at 10 s steps; 0)
//                  [--job-nodes N]  (nodes a watched job runs on: 8 ranks a node with --ranks,
//                                    else 2; --ranks 0 --job-nodes 64 is the same jobs untimed)
//                  [--summary-rows 0|1|2]  (2: rows for the 8 slowest nodes alone, as the
//                                           helper writes it; 1: a row a node, and 0: a column
//                                           a rank, as it wrote it before; 2)
//                  [--timing-read 0|1]  (0: the summaries are written as with 1, but no [[job]]
//                                        names its timing_dir: the bench's own work the same,
//                                        llmwatch's reading them the only difference; 1)
//                  [--cold 0|1]  (1: the caches cold at each steady cycle, as after a login
//                                 node's other work between two; 0)
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/process_memory.h"
#include "cycle/supervisor.h"
#include "probes/log_tail.h"
#include "probes/rank_timing.h"
#include "probes/training_log.h"
#include "rank_timing_sim.h"  // tests/helpers: the summary format the helper writes
#include "slurm/hostlist.h"
#include "slurm/slurm_text.h"
#include "store/goodput_ledger.h"
#include "store/store.h"
#include "util/subprocess.h"

using namespace llmwatch;
using Clock = std::chrono::steady_clock;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
// The kernel's part of it (system CPU): file syscalls, page cache, thread wake-ups. Instruction
// counts (callgrind) see none of it.
double system_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}
// Profiles of the steady cycles alone (the generator between them is most of the process's
// CPU): with LLMWATCH_BENCH_PERF_CTL=FIFO, "enable" and "disable" are written to it around each
// steady cycle, for `perf record -D -1 --control fifo:FIFO`.
void perf_control(const char* what) {
  static const char* fifo = std::getenv("LLMWATCH_BENCH_PERF_CTL");
  if (fifo == nullptr) return;
  std::ofstream(fifo) << what << "\n" << std::flush;
}
// VmRSS / VmHWM from /proc/self/status, in MiB.
double status_mib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::strlen(field))) / 1024.0;
  return 0;
}
// Forgets the peak so far (the generator's), so the peak measured next is the cycles' own.
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Sizes {
  int jobs = 100000, nodes = 16384, watched = 1000, log_mib = 1024, cycles = 20;
  int ranks = 0;      // > 0: every watched job has a rank 0 summary of this many ranks (#28)
  int rewritten = 3;  // of every 10 summaries, rewritten each cycle (3: 10 s steps, 30 s cycles)
  int warm = 0;       // steady cycles run before the measured ones, not measured
  int job_nodes = 0;  // nodes a watched job runs on; 0: 8 ranks a node, or 2 without timing
  // The summary's form: rows for the 8 slowest nodes ("v":3), a row a node ("v":2), or a column a
  // rank ("v":1).
  int summary_rows = 2;
  int timing_read = 1;  // 0: the summaries are written, but llmwatch is not told where
  int cold = 0;         // 1: each cycle starts with cold caches, as after 30 s of other work
  int stepping = 10;    // of every 10 watched jobs, logging steps each cycle; the rest are silent
  std::string format = "json";
};

std::string node_name(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "gpu%05d", i);
  return buf;
}

// The nodes job i runs on: 2 from the start of its 16-node slice; a watched job with per-rank
// timing, 8 ranks a node (its summary names these).
std::vector<std::string> job_nodes(const Sizes& s, int i) {
  const int first = (i * 16) % s.nodes;
  const int count = i >= s.watched    ? 2
                    : s.job_nodes > 0 ? s.job_nodes
                    : s.ranks > 0     ? (s.ranks + 7) / 8
                                      : 2;
  std::vector<std::string> out;
  for (int k = 0; k < count; ++k) out.push_back(node_name((first + k) % s.nodes));
  return out;
}

// squeue: job i runs on the nodes job_nodes gives; the first `watched` jobs are the watched
// trainings; every tenth job is pending.
std::string make_squeue_json(const Sizes& s, const std::string& dir) {
  auto doc = nlohmann::json::parse(
      slurp(std::string(LLMWATCH_SOURCE_DIR) + "/tests/fixtures/slurm-22.05.8/squeue.json"));
  nlohmann::json tmpl;
  for (const auto& j : doc["jobs"])
    if (j["job_state"] == "RUNNING") tmpl = j;
  doc["jobs"] = nlohmann::json::array();
  for (int i = 0; i < s.jobs; ++i) {
    nlohmann::json j = tmpl;
    j["job_id"] = 1000 + i;
    j["array_job_id"] = 0;
    j["array_task_id"] = nullptr;
    j["name"] = i < s.watched ? "train-" + std::to_string(i) : "job-" + std::to_string(i);
    bool pending = i % 10 == 9;
    j["job_state"] = pending ? "PENDING" : "RUNNING";
    const auto nodes = job_nodes(s, i);
    j["nodes"] = pending ? "" : compress_hostlist(nodes);
    j["node_count"] = nodes.size();
    j["standard_output"] = dir + "/logs/" + j["name"].get<std::string>() + ".log";
    doc["jobs"].push_back(std::move(j));
  }
  return doc.dump();
}

std::string make_sinfo_json(const Sizes& s) {
  auto doc = nlohmann::json::parse(
      slurp(std::string(LLMWATCH_SOURCE_DIR) + "/tests/fixtures/slurm-22.05.8/sinfo.json"));
  nlohmann::json tmpl = doc["nodes"][0];
  doc["nodes"] = nlohmann::json::array();
  for (int i = 0; i < s.nodes; ++i) {
    nlohmann::json n = tmpl;
    n["name"] = n["hostname"] = node_name(i);
    n["state"] = i % 500 == 7 ? "idle" : "allocated";
    n["state_flags"] = i % 500 == 7 ? nlohmann::json::array({"DRAIN"}) : nlohmann::json::array();
    n["reason"] = i % 500 == 7 ? "llmwatch: Xid 79 GPU 3" : "";
    doc["nodes"].push_back(std::move(n));
  }
  return doc.dump();
}

std::string make_squeue_text(const Sizes& s) {
  std::string out;
  for (int i = 0; i < s.jobs; ++i) {
    bool pending = i % 10 == 9;
    std::string id = std::to_string(1000 + i);
    out += id + "|" + id + "|N/A|" + (pending ? "PENDING" : "RUNNING") + "|" +
           (i < s.watched ? "train-" : "job-") + std::to_string(i) + "|alice|" +
           (pending ? "" : compress_hostlist(job_nodes(s, i))) + "|" +
           (pending ? "Priority" : "None") + "|1:00:00|2-00:00:00|2026-11-22T01:00:00\n";
  }
  return out;
}

std::string make_sinfo_text(const Sizes& s) {
  std::string out = "NODELIST|STATE|REASON|PARTITION\n";
  for (int i = 0; i < s.nodes; ++i)
    out += node_name(i) +
           (i % 500 == 7 ? "|drained|llmwatch: Xid 79 GPU 3|gpu\n" : "|allocated|none|gpu\n");
  return out;
}

// Slurm without the commands: the outputs above, parsed as the real client parses them.
class BenchSlurm : public SlurmClient {
 public:
  // The outputs are the bench's, held once: a copy here counted against the cycles' memory.
  BenchSlurm(const std::string& squeue, const std::string& sinfo, bool text)
      : SlurmClient(SlurmSettings{}), squeue_(squeue), sinfo_(sinfo), text_(text) {}
  SqueueParse queue() override {
    ++ctld_calls;
    return text_ ? parse_squeue_text(squeue_, filter()) : parse_squeue_json(squeue_, filter());
  }
  SinfoParse nodes() override {
    ++ctld_calls;
    return text_ ? parse_sinfo_text(sinfo_) : parse_sinfo_json(sinfo_);
  }
  std::map<std::string, std::string> show_job(const std::string& id) override {
    ++show_calls;
    ++ctld_calls;
    return {{"StdOut", dir + "/logs/train-" + std::to_string(std::stoll(id) - 1000) + ".log"},
            {"Command", "/shared/train.sh"},
            {"WorkDir", dir},
            {"Partition", "gpu"},
            {"Account", "(null)"}};
  }
  // squeue's details of new tasks, in one call (as the real client asks them).
  Result<JobDetails> job_details(const std::vector<std::string>& ids) override {
    ++ctld_calls;
    JobDetails out;
    for (const auto& id : ids)
      out[id] = {{"StdOut", dir + "/logs/train-" + std::to_string(std::stoll(id) - 1000) + ".log"},
                 {"Command", "/shared/train.sh"},
                 {"WorkDir", dir},
                 {"Partition", "gpu"},
                 {"Account", "(null)"}};
    return out;
  }
  // Calls that reach slurmctld in the cycle under way, and the most any cycle made.
  void end_cycle() {
    busiest = std::max(busiest, ctld_calls);
    total += ctld_calls;
    ctld_calls = 0;
  }
  std::string dir;
  int show_calls = 0, ctld_calls = 0, busiest = 0, total = 0;

 private:
  const std::string &squeue_, &sinfo_;
  bool text_;
};

void append_steps(const std::string& path, int from, int n) {
  std::ofstream out(path, std::ios::app);
  for (int s = from; s < from + n; ++s)
    out << "Epoch 0: : " << s << "it [00:10, reduced_train_loss=2.31, global_step=" << s
        << ".000, consumed_samples=" << s * 512 << ", train_step_timing in s=10.12]\n";
}

}  // namespace

// A rank 0 summary (llmwatch_timing.py's summary mode) of a healthy job on `nodes`: `ranks`
// ranks, 8 a node, paces within ±2% of each other, written at `ts` by rename as the helper
// writes it.
void write_summary(const std::string& dir, const std::vector<std::string>& nodes, int ranks,
                   double ts, unsigned seed, int rows) {
  RankWindows windows;
  windows.ranks.resize(static_cast<std::size_t>(ranks));
  windows.hosts = nodes;
  for (int r = 0; r < ranks; ++r) {
    RankWindow& w = windows.ranks[static_cast<std::size_t>(r)];
    w.rank = r;
    w.host = static_cast<std::uint32_t>(r / 8);
    w.now = 0.4 * (1 + 0.02 * (((r * 2654435761u + seed) % 1000) / 500.0 - 1));
    w.best = w.now * 0.99;
  }
  std::ofstream(dir + "/summary.json.tmp")
      << (rows > 0 ? testing::summary_json_v2(windows, ts, 200, seed, 6, 8, rows == 2)
                   : testing::summary_json(windows, ts, 200, seed));
  std::filesystem::rename(dir + "/summary.json.tmp", dir + "/summary.json");
}

int main(int argc, char** argv) {
  limit_malloc_arenas();  // as llmwatch itself does
  Sizes s;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--jobs")
      s.jobs = std::stoi(v);
    else if (k == "--nodes")
      s.nodes = std::stoi(v);
    else if (k == "--watched")
      s.watched = std::stoi(v);
    else if (k == "--format")
      s.format = v;
    else if (k == "--log-mib")
      s.log_mib = std::stoi(v);
    else if (k == "--cycles")  // more steady cycles, for a profiler; 0: the first cycle alone
      s.cycles = std::stoi(v);
    else if (k == "--warm")
      s.warm = std::stoi(v);
    else if (k == "--ranks")
      s.ranks = std::stoi(v);
    else if (k == "--rewritten")
      s.rewritten = std::stoi(v);
    else if (k == "--job-nodes")
      s.job_nodes = std::stoi(v);
    else if (k == "--summary-rows")
      s.summary_rows = std::stoi(v);
    else if (k == "--timing-read")
      s.timing_read = std::stoi(v);
    else if (k == "--cold")
      s.cold = std::stoi(v);
    else if (k == "--stepping")  // < 10: some runs silent (hung, paused, between long steps)
      s.stepping = std::stoi(v);
  }
  std::string dir =
      (std::filesystem::temp_directory_path() / ("llmwatch-bench-" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(dir + "/logs");
  bool text = s.format == "text";

  auto t0 = Clock::now();
  std::string squeue = text ? make_squeue_text(s) : make_squeue_json(s, dir);
  std::string sinfo = text ? make_sinfo_text(s) : make_sinfo_json(s);
  double gen_s = since(t0);
  // The generator's freed heap goes back to the system first: cycles must not be measured
  // on pages it left behind (that made the cycles look almost free).
  malloc_trim(0);
  reset_peak_rss();
  double rss_before = status_mib("VmRSS:");  // the generated outputs, held through the cycles

  Config config;
  config.state_dir = dir + "/state";
  // The shipped daemon interval (30 s) and a run stepping every 10 s: 3 steps per cycle.
  config.interval = Seconds(30);
  std::vector<std::string> timing_dirs;  // where each job's rank 0 writes its summary
  for (int i = 0; i < s.watched; ++i) {
    JobSettings j;
    j.name = "train-" + std::to_string(i);
    j.logs = {dir + "/logs/train-" + std::to_string(i) + ".log"};
    j.stale_after = Seconds(3600);
    if (s.ranks > 0) {
      timing_dirs.push_back(dir + "/timing/" + std::to_string(i));
      std::filesystem::create_directories(timing_dirs.back());
      if (s.timing_read) j.timing_dir = timing_dirs.back();
    }
    config.jobs.push_back(j);
    append_steps(j.logs[0], 1, 20);
  }
  Store store(config.state_dir);
  BenchSlurm slurm(squeue, sinfo, text);
  slurm.dir = dir;
  Supervisor supervisor(config, store, slurm);
  double now = unix_now();
  const double start = now;  // the summaries' cadences count from here
  for (int i = 0; i < s.watched && s.ranks > 0; ++i)
    write_summary(timing_dirs[i], job_nodes(s, i), s.ranks, now, 0, s.summary_rows);
  // Cycle 1 reads every log from the top; later cycles read what was appended (2 steps each).
  double c0 = cpu_seconds();
  t0 = Clock::now();
  supervisor.run_cycle(now);
  slurm.end_cycle();
  double first_cpu = cpu_seconds() - c0, first_wall = since(t0);
  const int cycles = s.cycles;
  std::vector<double> cpu, wall, system_cpu;
  auto db_size = [&] { return std::filesystem::file_size(Store::db_path(config.state_dir)); };
  auto size_after_first = db_size();
  for (int c = 0; c < s.warm + cycles; ++c) {
    for (int i = 0; i < s.watched; ++i)
      if (i % 10 < s.stepping) append_steps(config.jobs[i].logs[0], 21 + 3 * c, 3);
    now += 30;
    // At 10 s steps rank 0 writes every 10 steps (100 s): 3 of every 10 summaries are new
    // at each 30 s cycle. Each job's at its own steady cadence, as the helper writes it (its
    // "ts" the moment of the write), the jobs' phases spread over the cadence.
    for (int i = 0; i < s.watched && s.ranks > 0 && s.rewritten > 0; ++i) {
      const double gap = 300.0 / s.rewritten, phase = gap * i / s.watched;
      const double due = std::floor((now - start - phase) / gap) * gap + start + phase;
      if (due > now - 30)
        write_summary(timing_dirs[i], job_nodes(s, i), s.ranks, due, c + 1, s.summary_rows);
    }
    if (s.cold) {
      // 64 MiB written through: what the cycle before left in the caches is gone.
      static std::vector<char> other_work(64 << 20);
      for (std::size_t k = 0; k < other_work.size(); k += 64)
        other_work[k] = static_cast<char>(k + c);
    }
    const bool measured = c >= s.warm;
    if (measured) perf_control("enable");
    c0 = cpu_seconds();
    double s0 = system_cpu_seconds();
    t0 = Clock::now();
    supervisor.run_cycle(now);
    slurm.end_cycle();
    if (!measured) continue;
    perf_control("disable");
    cpu.push_back(cpu_seconds() - c0);
    system_cpu.push_back(system_cpu_seconds() - s0);
    wall.push_back(since(t0));
  }
  double growth_per_cycle = (static_cast<double>(db_size()) - size_after_first) / (s.warm + cycles);

  // The goodput ledger's own work in a cycle (#29): every watched run's state read, its look
  // accounted and recorded (a steady run's looks written together every kGoodputEvery), in
  // one transaction as the record phase does it. The cycle above includes it; this is its
  // share, the cycles that write included.
  std::vector<double> ledger_cpu;
  for (int c = 0; c < cycles; ++c) {
    now += 30;
    c0 = cpu_seconds();
    store.transaction([&] {
      for (int i = 0; i < s.watched; ++i) {
        const std::string label = "ledger-" + std::to_string(i);
        GoodputState state = store.goodput_state(label);
        GoodputLook look;
        look.now = now;
        look.task = std::to_string(1000 + i) + "@1";
        look.gpus = 8;
        look.advanced = true;
        look.step = 21 + 3 * c;
        auto charges = account_goodput(state, look);
        store.record_goodput(label, state, charges, now);
      }
    });
    ledger_cpu.push_back(cpu_seconds() - c0);
  }
  std::sort(ledger_cpu.begin(), ledger_cpu.end());
  std::sort(cpu.begin(), cpu.end());
  std::sort(wall.begin(), wall.end());
  std::sort(system_cpu.begin(), system_cpu.end());

  double cycle_rss = status_mib("VmHWM:");
  t0 = Clock::now();
  auto q = text ? parse_squeue_text(squeue) : parse_squeue_json(squeue);
  double squeue_s = since(t0);
  t0 = Clock::now();
  auto n = text ? parse_sinfo_text(sinfo) : parse_sinfo_json(sinfo);
  double sinfo_s = since(t0);
  if (!q.ok() || !n.ok() || static_cast<int>(q.jobs.size()) != s.jobs ||
      static_cast<int>(n.nodes.size()) != s.nodes) {
    std::cerr << "bench: generated output did not parse: " << q.error << n.error << "\n";
    return 1;
  }
  q = {};
  n = {};
  // What a cycle actually parses: only the watched jobs are kept.
  JobFilter filter;
  for (int i = 0; i < s.watched; ++i) filter.names.insert("train-" + std::to_string(i));
  filter.names.insert("llmwatch");
  t0 = Clock::now();
  auto filtered = text ? parse_squeue_text(squeue, &filter) : parse_squeue_json(squeue, &filter);
  double filtered_s = since(t0);
  std::size_t kept = filtered.jobs.size();
  filtered = {};

  // Log scanning throughput: one big log, read from the top in bounded chunks (as cycles
  // would), lines parsed; then `cat FILE > /dev/null` in the same run.
  std::string big = dir + "/big.log";
  {
    std::ofstream out(big);
    std::string line =
        "[NeMo I 2026-11-22 01:00:00 utils:123] reduced_train_loss: 2.312 | global_step: 123456 | "
        "consumed_samples: 63209472 | train_step_timing in s: 12.39 | lr: 0.0003\n";
    std::string block;
    while (block.size() < (1 << 20)) block += line;
    for (int m = 0; m < s.log_mib; ++m) out << block;
  }
  double big_mib = std::filesystem::file_size(big) / 1048576.0;
  // Read only, then read + parse (what a cycle does), each from the top in bounded reads,
  // through scan_appended as the cycle reads (the lines handed on as they are read).
  struct stat big_stat {};
  ::stat(big.c_str(), &big_stat);
  auto scan = [&](bool parse, std::uint64_t& bytes, std::uint64_t& lines) {
    // Known to the cursor, so read from the top (a first look at a huge file reads its tail).
    LogCursor c{big_stat.st_dev, big_stat.st_ino, 0};
    TrainingLogParser parser;
    auto start = Clock::now();
    for (;;) {
      LogChunk chunk =
          scan_appended(big, c, LogTailLimits{64ull << 20, 1 << 20},
                        [&](std::span<const std::string_view> got, std::span<const std::uint64_t>) {
                          if (!parse) return void(lines += got.size());
                          for (const auto& l : got) lines += parser.parse(l).step ? 1 : 0;
                        });
      bytes += chunk.bytes_read;
      if (chunk.bytes_read == 0) break;
    }
    return since(start);
  };
  std::uint64_t read_bytes = 0, parsed_bytes = 0, lines = 0, unused = 0;
  double read_s = scan(false, read_bytes, unused);
  double scan_s = scan(true, parsed_bytes, lines);
  LogCursor cursor;
  cursor.offset = std::filesystem::file_size(big);
  {
    struct stat st {};
    ::stat(big.c_str(), &st);
    cursor.dev = st.st_dev;
    cursor.inode = st.st_ino;
  }
  append_steps(big, 1, 1000);
  t0 = Clock::now();
  auto inc = read_appended(big, cursor);
  double inc_s = since(t0);
  ProcessSpec cat;
  cat.argv = {"sh", "-c", "cat \"$0\" > /dev/null", big};  // the reference, as the issue states it
  cat.timeout = std::chrono::minutes(10);
  t0 = Clock::now();
  run_process(cat);
  double cat_s = since(t0);

  std::printf("| measure (%s, %d nodes, %d jobs, %d watched%s) | value | target |\n",
              s.format.c_str(), s.nodes, s.jobs, s.watched,
              s.ranks > 0
                  ? (", each with a rank 0 summary of " + std::to_string(s.ranks) + " ranks (" +
                     (s.summary_rows == 2   ? "rows for the 8 slowest nodes"
                      : s.summary_rows == 1 ? "a row a node"
                                            : "a column a rank") +
                     "), " + std::to_string(s.rewritten * 10) + "% rewritten a cycle" +
                     (s.timing_read ? "" : ", none of them read"))
                        .c_str()
                  : "");
  std::printf("|---|---|---|\n");
  std::printf("| squeue output size / parse | %.1f MiB / %.0f ms | |\n", squeue.size() / 1048576.0,
              squeue_s * 1000);
  std::printf(
      "| squeue parse keeping only the watched jobs (as a cycle does) | %.0f ms, %zu kept | |\n",
      filtered_s * 1000, kept);
  std::printf("| sinfo output size / parse | %.1f MiB / %.0f ms | |\n", sinfo.size() / 1048576.0,
              sinfo_s * 1000);
  std::printf("| first cycle (every log read from the top) | %.0f ms CPU, %.0f ms wall | |\n",
              first_cpu * 1000, first_wall * 1000);
  // --cycles 0 runs the first cycle alone: what a profiler subtracts from a run of N cycles to
  // count the steady ones. There is no steady cycle to report (its median was read past the end).
  if (cycles == 0) return 0;
  std::printf(
      "| steady cycle at the 30 s interval, median of %d (parse, evaluate, decide, record) | %.0f "
      "ms CPU, %.0f ms wall; slowest %.0f ms CPU (a cycle that also writes the baselines) | <= 50 "
      "ms CPU (text), <= 1 s (json) |\n",
      cycles, cpu[cycles / 2] * 1000, wall[cycles / 2] * 1000, cpu.back() * 1000);
  // The host's other load only ever adds to a cycle's CPU time (a neighbour's cache traffic, a
  // stolen core): the cycles it disturbed least say what the cycle itself costs, with less of
  // the run-to-run drift a median keeps (bench/paired_cpu.py --statistic quartile).
  std::printf(
      "| steady cycle CPU, lower quartile of %d (the cycles least disturbed) | %.1f ms | |\n",
      cycles, cpu[cycles / 4] * 1000);
  std::printf("| of which in the kernel (system CPU), median of %d | %.1f ms | |\n", cycles,
              system_cpu[cycles / 2] * 1000);
  double ledger_mean = 0;
  for (double c : ledger_cpu) ledger_mean += c / cycles;
  std::printf(
      "| of which the goodput ledger (state, look, charges, one transaction), median of %d; mean "
      "with the cycles that write | %.1f ms CPU (%.1f%% of the steady cycle); mean %.1f ms "
      "(%.1f%%), slowest %.1f ms | <= 5%% |\n",
      cycles, ledger_cpu[cycles / 2] * 1000, 100 * ledger_cpu[cycles / 2] / cpu[cycles / 2],
      ledger_mean * 1000, 100 * ledger_mean / cpu[cycles / 2], ledger_cpu.back() * 1000);
  std::printf(
      "| peak RSS through the cycles, outputs excluded (bench process %.0f MiB, of which the "
      "generated outputs held %.0f MiB) | %.0f MiB | <= 40 MiB |\n",
      cycle_rss, rss_before, cycle_rss - rss_before);
  std::printf("| peak RSS after also parsing the whole queue unfiltered | %.0f MiB | |\n",
              status_mib("VmHWM:"));
  std::printf(
      "| state growth per cycle / per day at 30 s | %.1f KiB / %.1f MiB (history kept %s, "
      "compacted hourly) | bounded |\n",
      growth_per_cycle / 1024, growth_per_cycle * 2880 / 1048576,
      format_duration(config.keep_history).c_str());
  std::printf(
      "| slurmctld calls in the busiest cycle (the first: %d watched tasks are new) / all "
      "cycles; of them `scontrol show job` | %d / %d over %d cycles; %d | <= 3 |\n",
      s.watched, slurm.busiest, slurm.total, s.warm + cycles + 1, slurm.show_calls);
  std::printf(
      "| log scan of %.0f MiB, read only (split into lines, no parse) | %.0f MiB/s | >= 50%% of "
      "cat |\n",
      read_bytes / 1048576.0, read_bytes / 1048576.0 / read_s);
  std::printf(
      "| log scan of %.0f MiB, read + parse every line (as a cycle) | %.0f MiB/s (%llu step lines) "
      "| |\n",
      parsed_bytes / 1048576.0, parsed_bytes / 1048576.0 / scan_s,
      static_cast<unsigned long long>(lines));
  std::printf("| `cat FILE > /dev/null`, same file, same run | %.0f MiB/s | |\n", big_mib / cat_s);
  std::printf("| incremental read of 1,000 appended lines | %.1f ms (%llu bytes) | |\n",
              inc_s * 1000, static_cast<unsigned long long>(inc.bytes_read));
  std::printf("| (generating the synthetic outputs took %.1f s) | | |\n", gen_s);
  std::filesystem::remove_all(dir);
  return 0;
}
