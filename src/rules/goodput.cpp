#include "rules/goodput.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/json_writer.h"
#include "util/text.h"

namespace llmwatch {
namespace {

double finite_or(double v, double fallback) {
  return std::isfinite(v) ? v : fallback;
}

}  // namespace

// Written with the small writer: a run's state is written every cycle (#29: building an
// nlohmann object for it cost more than the look itself).
std::string GoodputState::to_json() const {
  JsonWriter w;
  w.begin_object();
  w.key("at").value(at).key("best").value(best).key("gpus").value(gpus);
  w.key("hung").value(hung).key("last_cause").value(last_cause);
  w.key("last_node").value(last_node).key("last_step").value(last_step);
  w.key("open_s").value(open_s).key("redo_cause").value(redo_cause);
  w.key("redo_node").value(redo_node).key("redo_upto").value(redo_upto);
  w.key("stepped").value(stepped).key("task").value(task);
  return w.end_object().take();
}

bool GoodputState::round_trips() const {
  for (double d : {at, open_s, gpus})  // from_json keeps these finite and non-negative
    if (!std::isfinite(d) || d < 0) return false;
  for (std::int64_t i : {redo_upto, best, last_step})  // read back through a double
    if (i > (std::int64_t{1} << 53) || i < -(std::int64_t{1} << 53)) return false;
  for (const std::string* s : {&task, &redo_cause, &redo_node, &last_cause, &last_node})
    if (!is_valid_utf8(*s)) return false;
  return true;
}

GoodputState GoodputState::from_json(const std::string& text) {
  GoodputState s;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return s;
  auto num = [&](const char* k, double d) {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? finite_or(it->get<double>(), d) : d;
  };
  auto str = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto flag = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  s.at = std::max(0.0, num("at", 0));
  s.task = str("task");
  s.stepped = flag("stepped");
  s.hung = flag("hung");
  s.open_s = std::max(0.0, num("open_s", 0));
  s.redo_upto = static_cast<std::int64_t>(num("redo_upto", -1));
  s.redo_cause = str("redo_cause");
  s.redo_node = str("redo_node");
  s.last_cause = str("last_cause");
  s.last_node = str("last_node");
  s.best = static_cast<std::int64_t>(num("best", -1));
  s.last_step = static_cast<std::int64_t>(num("last_step", -1));
  s.gpus = std::max(0.0, num("gpus", 0));
  return s;
}

std::vector<GoodputCharge> account_goodput(GoodputState& st, const GoodputLook& look) {
  std::vector<GoodputCharge> out;
  auto charge = [&](const char* bucket, const std::string& cause, const std::string& node,
                    double gpu_s) {
    if (gpu_s > 0 && std::isfinite(gpu_s)) out.push_back({bucket, cause, node, gpu_s});
  };
  double gpus = look.gpus > 0 && std::isfinite(look.gpus) ? look.gpus : 1;
  // A clock that went back charges nothing; the next look goes on from the new time.
  double dt = st.at > 0 && std::isfinite(look.now) ? std::max(0.0, look.now - st.at) : 0;

  // A new task that started after the last look: its allocation begins at its start.
  bool new_task = !look.task.empty() && look.task != st.task;
  double start =
      new_task && st.at > 0 && look.task_start > st.at ? std::min(look.task_start, look.now) : -1;
  bool settled = false;
  // The accounted task is gone (it ended, or another replaced it between two looks): the time
  // since its last step, and up to now (or the new task's start), was its end's: a hang, or
  // the idle end (teardown, a crash's last moments, the time limit's waste).
  if (!st.task.empty() && look.task != st.task) {
    std::string cause = look.ended ? look.ended->first : "unknown";
    std::string node = look.ended ? look.ended->second : "";
    if (st.hung) cause = "hang";
    double until = start >= 0 ? start : look.now;
    double tail = st.at > 0 ? std::max(0.0, until - st.at) : 0;
    charge(st.hung ? "hang" : "idle end", cause, node,
           st.open_s + tail * (st.gpus > 0 ? st.gpus : gpus));
    st.last_cause = cause;
    st.last_node = node;
    st.task.clear();
    st.open_s = 0;
    dt = start >= 0 ? look.now - start : 0;
    settled = true;
  }
  if (look.task.empty()) {
    if (look.pending && !st.last_cause.empty()) charge("queue", st.last_cause, "", dt * gpus);
    if (std::isfinite(look.now)) st.at = std::max(st.at, look.now);
    st.gpus = gpus;
    return out;
  }
  if (new_task) {  // it starts from its allocation
    st.task = look.task;
    st.stepped = st.hung = false;
    st.open_s = 0;
    st.redo_upto = st.best;
    st.redo_cause = st.last_cause.empty() ? "unknown" : st.last_cause;
    st.redo_node = st.last_node;
    st.last_step = -1;
    if (!settled && start >= 0) {
      // Between the last look and its start it waited in the queue.
      if (!st.last_cause.empty()) charge("queue", st.last_cause, "", (start - st.at) * gpus);
      dt = look.now - start;
    }
  }
  double s = dt * gpus;
  if (look.hang_firing) {
    st.hung = true;
    charge("hang", "hang", "", st.open_s + s);
    st.open_s = 0;
  } else if (look.checkpointing) {
    charge("checkpoint", "", "", s);
  } else if (!st.stepped) {
    charge("startup", "", "", st.open_s + s);
    st.open_s = 0;
    st.stepped = look.advanced;
  } else if (look.advanced && look.step) {
    double t = st.open_s + s;
    st.open_s = 0;
    // The share of the steps since the last look that were done before: rework.
    double redo = 0;
    std::int64_t from = st.last_step >= 0 ? st.last_step : *look.step;
    if (*look.step <= st.redo_upto)
      redo = 1;
    else if (from<st.redo_upto&& * look.step> from)
      redo = static_cast<double>(st.redo_upto - from) / static_cast<double>(*look.step - from);
    double rework = t * redo;
    double slow = (t - rework) * std::clamp(finite_or(look.slow_share, 0), 0.0, 1.0);
    charge("rework", st.redo_cause, st.redo_node, rework);
    charge("slow", "slowdown", "", slow);
    charge("productive", "", "", t - rework - slow);
  } else {
    st.open_s += s;
  }
  if (look.step) {
    st.last_step = *look.step;
    st.best = std::max(st.best, *look.step);
  }
  if (std::isfinite(look.now)) st.at = std::max(st.at, look.now);
  st.gpus = gpus;
  return out;
}

}  // namespace llmwatch
