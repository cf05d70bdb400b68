#include "rules/goodput.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace llmwatch {
namespace {

double finite_or(double v, double fallback) {
  return std::isfinite(v) ? v : fallback;
}

}  // namespace

std::string GoodputState::to_json() const {
  return nlohmann::json{{"at", at},
                        {"task", task},
                        {"stepped", stepped},
                        {"hung", hung},
                        {"open_s", open_s},
                        {"redo_upto", redo_upto},
                        {"redo_cause", redo_cause},
                        {"redo_node", redo_node},
                        {"last_cause", last_cause},
                        {"last_node", last_node},
                        {"best", best},
                        {"last_step", last_step},
                        {"gpus", gpus}}
      .dump();
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
