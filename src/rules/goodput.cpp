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
  w.key("between_from").value(between_from);
  if (!last_task.empty()) w.key("last_task").value(last_task);
  if (!redo_task.empty()) w.key("redo_task").value(redo_task);
  if (!node_charges.empty()) {
    w.key("node_charges").begin_array();
    for (const auto& c : node_charges) {
      w.begin_object().key("task").value(c.task).key("day").value(c.day);
      w.key("bucket").value(c.bucket).key("cause").value(c.cause).key("node").value(c.node);
      w.key("gpu_s").value(c.gpu_s).end_object();
    }
    w.end_array();
  }
  return w.end_object().take();
}

bool GoodputState::round_trips() const {
  for (double d :
       {at, open_s, gpus, between_from})  // from_json keeps these finite and non-negative
    if (!std::isfinite(d) || d < 0) return false;
  for (std::int64_t i : {redo_upto, best, last_step})  // read back through a double
    if (i > (std::int64_t{1} << 53) || i < -(std::int64_t{1} << 53)) return false;
  for (const std::string* s :
       {&task, &redo_cause, &redo_node, &last_cause, &last_node, &last_task, &redo_task})
    if (!is_valid_utf8(*s)) return false;
  for (const auto& c : node_charges) {
    if (!std::isfinite(c.gpu_s) || !(c.gpu_s > 0) || c.day > (std::int64_t{1} << 53) ||
        c.day < -(std::int64_t{1} << 53))
      return false;
    for (const std::string* s : {&c.task, &c.bucket, &c.cause, &c.node})
      if (!is_valid_utf8(*s)) return false;
  }
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
  s.between_from = std::max(0.0, num("between_from", 0));
  s.last_task = str("last_task");
  s.redo_task = str("redo_task");
  if (auto it = j.find("node_charges"); it != j.end() && it->is_array())
    for (const auto& e : *it) {
      if (!e.is_object()) continue;
      auto text = [&](const char* k) {
        auto f = e.find(k);
        return f != e.end() && f->is_string() ? f->get<std::string>() : std::string();
      };
      auto day = e.find("day");
      auto gpu_s = e.find("gpu_s");
      if (day == e.end() || !day->is_number() || gpu_s == e.end() || !gpu_s->is_number()) continue;
      double g = finite_or(gpu_s->get<double>(), 0);
      if (g > 0)
        s.node_charges.push_back({text("task"), static_cast<std::int64_t>(day->get<double>()),
                                  text("bucket"), text("cause"), text("node"), g});
    }
  return s;
}

namespace {

// The seconds of [from, to] that `span` covers.
double overlap(std::pair<double, double> span, double from, double to) {
  return std::max(0.0, std::min(span.second, to) - std::max(span.first, from));
}

// `t` when it lies in [from, to], else `otherwise`: a clock that is not in the window it
// claims to split (unknown, or from a file server whose clock is off) splits nothing.
double within(double t, double from, double to, double otherwise) {
  return std::isfinite(t) && t >= from && t <= to ? t : otherwise;
}

}  // namespace

std::vector<GoodputCharge> account_goodput(GoodputState& st, const GoodputLook& look) {
  std::vector<GoodputCharge> out;
  auto charge = [&](const char* bucket, const std::string& cause, const std::string& node,
                    double gpu_s, const std::string& end_task = {}) {
    if (gpu_s > 0 && std::isfinite(gpu_s))
      out.push_back({bucket, cause, node, gpu_s, node.empty() ? std::string() : end_task});
  };
  double gpus = look.gpus > 0 && std::isfinite(look.gpus) ? look.gpus : 1;
  const double now = std::isfinite(look.now) ? look.now : st.at;
  // [from, now] is the time this look accounts. A clock that went back accounts nothing; the
  // next look goes on from the new time. The first look ever starts the count.
  double from = st.at > 0 ? std::min(st.at, now) : now;

  // Steps done since the last step seen, `work` GPU-seconds of them: the share that was done
  // before (the run resumed from an older checkpoint) is rework, charged to the failure that
  // made it; of the rest, a slowdown's share is slow; the remainder is productive.
  auto credit = [&](double work, std::int64_t step) {
    double redo = 0;
    std::int64_t past = st.last_step >= 0 ? st.last_step : step;
    if (step <= st.redo_upto)
      redo = 1;
    else if (past < st.redo_upto && step > past)
      redo = static_cast<double>(st.redo_upto - past) / static_cast<double>(step - past);
    double rework = work * redo;
    double slow = (work - rework) * std::clamp(finite_or(look.slow_share, 0), 0.0, 1.0);
    charge("rework", st.redo_cause, st.redo_node, rework, st.redo_task);
    charge("slow", "slowdown", "", slow);
    charge("productive", "", "", work - rework - slow);
  };
  auto note_step = [&] {
    if (!look.step) return;
    st.last_step = *look.step;
    st.best = std::max(st.best, *look.step);
  };

  // A new task: its allocation begins at its start. Slurm's start is whole seconds: one
  // within the second before the last look is taken as that look.
  bool new_task = !look.task.empty() && look.task != st.task;
  double start =
      new_task && st.at > 0 && look.task_start > 0 ? std::clamp(look.task_start, from, now) : -1;
  bool ended_here = false;
  // The accounted task is gone (it ended, or another replaced it between two looks): the time
  // since its last step, and up to its end (Slurm's, or now, or the new task's start), was its
  // end's: a hang, or the idle end (teardown, a crash's last moments, the time limit's waste).
  if (!st.task.empty() && look.task != st.task) {
    std::string cause = look.ended ? look.ended->first : "unknown";
    std::string node = look.ended ? look.ended->second : "";
    if (st.hung) cause = "hang";
    double task_gpus = st.gpus > 0 ? st.gpus : gpus;
    double limit = start >= 0 ? start : now;
    double until = look.ended_at > 0 ? std::clamp(look.ended_at, from, limit) : limit;
    // Its last lines, read after it ended, may hold steps: trained until the last of them.
    if (look.task.empty() && look.advanced && look.step && st.stepped && !st.hung) {
      double cut = within(look.progress_at, from, until, from);
      credit(st.open_s + (cut - from) * task_gpus, *look.step);
      st.open_s = 0;
      from = cut;
    }
    note_step();
    charge(st.hung ? "hang" : "idle end", cause, node, st.open_s + (until - from) * task_gpus,
           st.task);
    st.last_cause = cause;
    st.last_node = node;
    st.last_task = st.task;
    st.task.clear();
    st.open_s = 0;
    st.between_from = until;
    from = start >= 0 ? start : now;  // a new task of unknown start: counted from now
    ended_here = true;
  }
  // The time between two runs of the training is the queue's when the training goes on: from
  // the last end (or the last look) until now, or until the new task's start.
  auto queue_until = [&](double until) {
    if (st.last_cause.empty()) return;  // the first submission's wait is no restart's
    double q_from = st.between_from > 0 ? std::min(st.between_from, until) : st.at;
    if (q_from > 0) charge("queue", st.last_cause, "", (until - q_from) * gpus);
    st.between_from = 0;
  };
  if (look.task.empty()) {
    if (look.pending && !ended_here)
      queue_until(now);
    else if (!ended_here)
      st.between_from = 0;  // neither waiting nor running: nothing between runs to charge
    st.at = std::max(st.at, now);
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
    st.redo_task = st.last_task;
    st.last_step = -1;
    if (start >= 0) {
      queue_until(start);
      from = start;
    }
    st.between_from = 0;
  }
  const std::pair<double, double> save{look.save_from > 0 ? look.save_from : now,
                                       look.save_to > 0 ? look.save_to : now};
  auto working = [&](double a, double b) {  // GPU-seconds of [a, b] not spent saving
    return std::max(0.0, (b - a) - overlap(save, a, b)) * gpus;
  };
  if (look.hang_firing) {
    st.hung = true;
    charge("hang", "hang", "", st.open_s + (now - from) * gpus);
    st.open_s = 0;
  } else {
    charge("checkpoint", "", "", overlap(save, from, now) * gpus);
    // The last step splits the time: before it, work whose fate is known; after it, open.
    double cut = look.advanced && look.step ? within(look.progress_at, from, now, now) : from;
    double work = st.open_s + working(from, cut);
    st.open_s = working(cut, now);
    if (!st.stepped && !(look.advanced && look.step)) {
      // Until the first step everything is startup (launch, compile, checkpoint load).
      charge("startup", "", "", work + st.open_s);
      st.open_s = 0;
    } else if (!st.stepped) {
      // The first step: startup up to it; the steps after it in the same read are training.
      double first = look.first_step ? within(look.first_step_at, from, cut, cut) : cut;
      charge("startup", "", "", work - working(first, cut));
      st.last_step = look.first_step.value_or(*look.step);
      st.stepped = true;
      credit(working(first, cut), *look.step);
    } else if (look.advanced && look.step) {
      credit(work, *look.step);
    } else {
      st.open_s = work + st.open_s;  // no step: still open, all of it
    }
  }
  note_step();
  st.at = std::max(st.at, now);
  st.gpus = gpus;
  return out;
}

std::vector<NodeCharge> unblame_loop(GoodputState& st, std::vector<GoodputCharge>& charges,
                                     std::int64_t day, const std::vector<std::string>& loop,
                                     const std::vector<std::string>& streak) {
  auto in_loop = [&](const std::string& task) {
    return !task.empty() && std::find(loop.begin(), loop.end(), task) != loop.end();
  };
  for (auto& c : charges) {
    if (c.node.empty() || c.end_task.empty()) continue;
    if (in_loop(c.end_task)) {
      c.node.clear();
      continue;
    }
    auto same = [&](const NodeCharge& k) {
      return k.task == c.end_task && k.day == day && k.bucket == c.bucket && k.cause == c.cause &&
             k.node == c.node;
    };
    auto it = std::find_if(st.node_charges.begin(), st.node_charges.end(), same);
    if (it != st.node_charges.end())
      it->gpu_s += c.gpu_s;
    else
      st.node_charges.push_back({c.end_task, day, c.bucket, c.cause, c.node, c.gpu_s});
  }
  // The next run's rework and queue are charged to the last end: a loop's is no node's.
  if (in_loop(st.last_task)) st.last_node.clear();
  if (in_loop(st.redo_task)) st.redo_node.clear();
  std::vector<NodeCharge> taken;
  std::erase_if(st.node_charges, [&](NodeCharge& k) {
    if (!in_loop(k.task)) return false;
    taken.push_back(std::move(k));
    return true;
  });
  // Only ends that may yet be a loop's, and the last few of them: the oldest end's go first.
  std::erase_if(st.node_charges, [&](const NodeCharge& k) {
    return k.task != st.last_task &&
           std::find(streak.begin(), streak.end(), k.task) == streak.end();
  });
  std::vector<std::string> ends;
  for (const auto& k : st.node_charges)
    if (std::find(ends.begin(), ends.end(), k.task) == ends.end()) ends.push_back(k.task);
  if (ends.size() > GoodputState::kNodeChargeEnds) {
    ends.resize(ends.size() - GoodputState::kNodeChargeEnds);
    std::erase_if(st.node_charges, [&](const NodeCharge& k) {
      return std::find(ends.begin(), ends.end(), k.task) != ends.end();
    });
  }
  return taken;
}

}  // namespace llmwatch
