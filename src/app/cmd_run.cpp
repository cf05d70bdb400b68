// `run --once` and `daemon`: take the lease, run cycles, give the lease back.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/cycle_watchdog.h"
#include "app/detached_worker.h"
#include "app/http_listener.h"
#include "config/job_owner.h"
#include "cycle/hang_wake.h"
#include "cycle/self_chain.h"
#include "cycle/supervisor.h"
#include "probes/log_growth.h"
#include "slurm/slurm_snapshot.h"
#include "store/keys.h"
#include "store/lease.h"
#include "store/store.h"
#include "util/identity.h"
#include "util/paths.h"
#include "util/strings.h"
#include "util/text.h"
#include "util/units.h"
#include "views/metrics.h"

namespace llmwatch {

namespace {

// One cycle under the lease; false when another instance holds it (not an error).
// With a snapshot: a tick keeps its squeue and sinfo answers there, and a wake (`replay`)
// uses them instead of asking slurmctld again.
// Before the lease goes: the goodput looks this process kept in memory are written while it
// still holds it (a successor may start accounting the moment it is free). A lease already
// lost leaves them unwritten: the successor charges that time again from the stored state.
void release_lease(Store& store, Lease& lease) {
  try {
    if (lease.check(unix_now()).empty()) store.flush_goodput();
  } catch (const std::exception& e) {
    spdlog::warn("goodput ledger: pending looks not written: {}", e.what());
  }
  lease.release();
}

// `waits`, when given, gets the cycle's result: how many of its actions wait on something (a
// restart waiting for its task's end), and for which running tasks.
bool cycle_under_lease(const Config& config, Store& store, Lease& lease,
                       SlurmSnapshot* snapshot = nullptr, bool replay = false,
                       CycleResult* waits = nullptr) {
  double now = unix_now();
  if (!lease.acquire(now, static_cast<double>(config.lease_ttl.count()))) {
    // Its own lease, unrenewable, or none that could be written: the state directory is the
    // trouble (full, read-only), not a second llmwatch, and the log must not send the operator
    // looking for one (the chaos soak's read-only disk read "another llmwatch holds the lease
    // (vm:<our own pid> ...)").
    if (lease.held() || !lease.last_error().empty()) {
      spdlog::error(
          "cannot renew or take the lease in {}: {}; not acting until it can", config.state_dir,
          lease.last_error().empty() ? "a takeover lock is in the way" : lease.last_error());
      return false;
    }
    auto holder = Lease::read(config.state_dir);
    spdlog::info("another llmwatch holds the lease ({}); not acting",
                 holder ? holder->str() : "being written");
    return false;
  }
  // Fencing: before each action the lease must still name us, within the cycle's deadline.
  auto deadline = std::chrono::steady_clock::now() + config.cycle_deadline;
  Fence fence = [&]() -> std::string {
    if (std::chrono::steady_clock::now() > deadline)
      return "the cycle deadline (" + format_duration(config.cycle_deadline) + ") passed";
    return lease.check(unix_now());
  };
  CycleWatchdog watchdog(std::chrono::milliseconds(config.cycle_deadline) * 5 / 4, [&] {
    spdlog::critical(
        "cycle still running {} after its deadline of {}; exiting so the lease "
        "passes on",
        format_duration(config.cycle_deadline / 4), format_duration(config.cycle_deadline));
    spdlog::default_logger()->flush();
    lease.release();
    report_exit_code(kExitFailure);  // the exit itself may block on the stuck thread
    std::_Exit(kExitFailure);
  });
  SlurmSnapshot none;
  SnapshotSlurm slurm(config.slurm, snapshot ? *snapshot : none, snapshot && replay);
  Supervisor supervisor(config, store, slurm, fence);
  auto r = supervisor.run_cycle(now);
  spdlog::info(
      "cycle done in {:.2f}s: {} finding(s) ({} new, {} resolved), {} action(s), {} unknown "
      "probe(s)",
      r.finished - r.started, r.findings.size(), r.new_findings, r.resolved, r.actions,
      r.unknown_probes);
  for (const auto& f : r.findings)
    spdlog::info("  {} {}: {}", severity_name(f.severity), terminal_safe(f.key),
                 terminal_safe(f.summary));
  if (waits) *waits = r;
  return true;
}

// A run of the self-perpetuating job queues its successor before anything else.
void queue_successor_if_self_job(const Config& config) {
  if (!std::getenv("LLMWATCH_SELF_JOB")) return;
  long delay = config.self.interval.count();
  std::string path = config.path;
  try {  // `submit --interval` and the config path it used, when the store can tell
    Store store(config.state_dir);
    if (store.get(kv::kSelfChain).value_or("on") != "on") return;
    delay = std::strtol(store.get(kv::kSelfInterval).value_or(std::to_string(delay)).c_str(),
                        nullptr, 10);
    path = store.get(kv::kSelfConfig).value_or(path);
  } catch (const std::exception& e) {
    spdlog::warn("state unreadable ({}); queuing the successor from the config", e.what());
  }
  SlurmClient slurm(config.slurm);
  auto submitted = queue_successor_first(config, path, delay, slurm);
  if (submitted.job_id)
    spdlog::info("queued the next llmwatch job {} first", *submitted.job_id);
  else
    spdlog::error("could not queue the next llmwatch job: {}", submitted.error);
}

}  // namespace

int cmd_run_once(const Config& config) {
  queue_successor_if_self_job(config);
  // A run of the self job with a span supervises as the daemon does until it hands over.
  if (std::getenv("LLMWATCH_SELF_JOB") && config.self.span.count() > 0)
    return cmd_daemon(config.path, config, "", config.self.span);
  try {
    Store store(config.state_dir);
    Lease lease(config.state_dir, hostname(), static_cast<int>(getpid()));
    const bool acted = cycle_under_lease(config, store, lease);
    release_lease(store, lease);
    // Not acting for a second llmwatch is no failure; for a lease it could not write, it is.
    return acted || lease.last_error().empty() ? kExitOk : kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

int cmd_daemon(const std::string& config_path, Config config, const std::string& listen,
               Seconds run_for) {
  try {
    Store store(config.state_dir);
    Lease lease(config.state_dir, hostname(), static_cast<int>(getpid()));
    boost::asio::io_context io;
    std::unique_ptr<HttpListener> http;
    if (!listen.empty()) {
      http = std::make_unique<HttpListener>(io, listen, [&](const std::string& path) -> HttpReply {
        double now = unix_now();
        if (path == "/metrics")
          return {200, "text/plain; version=0.0.4; charset=utf-8",
                  render_metrics(config, store, now)};
        if (path == "/healthz") {
          auto hb = nlohmann::json::parse(store.get(kv::kHeartbeat).value_or("{}"), nullptr, false);
          double age = hb.is_object() && hb.contains("ts") ? now - hb["ts"].get<double>() : 1e18;
          bool healthy = age < 3.0 * static_cast<double>(config.interval.count()) + 60;
          return {healthy ? 200 : 503, "text/plain", healthy ? "ok\n" : "no recent cycle\n"};
        }
        return {404, "text/plain", "try /metrics or /healthz\n"};
      });
      if (http->listening()) spdlog::info("serving /metrics and /healthz on {}", listen);
    }
    boost::asio::signal_set stop_signals(io, SIGTERM, SIGINT);
    boost::asio::signal_set reload_signal(io, SIGHUP);
    boost::asio::steady_timer timer(io), wake_timer(io), sample_timer(io);
    std::function<void()> tick;
    std::function<void()> wait_reload;
    SlurmSnapshot snapshot;
    // A wake for a job whose hang allowance runs out before the next tick (#30): one pending at
    // a time, each from the tick's snapshot of the queue (no new slurmctld polls), and the next
    // one scheduled after it, so two jobs due within one interval are both found at their
    // deadlines; kWakePastDeadline after it, so the allowance has run out when it looks.
    double next_tick_at = 0;
    // When the last cycle judged the jobs (its clock): a deadline that runs out while it runs is
    // not missed until the next tick.
    double looked_at = 0;
    std::function<void()> schedule_wake;
    // The running tasks whose end a restart waits for, as the last cycle said.
    std::vector<std::string> awaited;
    // A cycle on the tick's snapshot (no slurmctld poll), then the next wake scheduled.
    auto replay = [&](const char* why) {
      if (!snapshot.queue) return;
      spdlog::info("wake: {}", why);
      CycleResult r;  // stays empty when the cycle did not run
      try {
        cycle_under_lease(config, store, lease, &snapshot, true, &r);
      } catch (const std::exception& e) {
        spdlog::error("wake cycle failed: {}", e.what());
        awaited.clear();
        return;
      }
      awaited = r.awaited;
      looked_at = r.started;
      try {
        schedule_wake();
      } catch (const std::exception& e) {
        spdlog::error("cannot schedule a wake: {}", e.what());
      }
    };
    schedule_wake = [&] {
      wake_timer.cancel();
      if (!snapshot.queue) return;
      double now = unix_now();
      // A cycle that did not run looked at nothing: as if it had, now.
      auto at = earliest_hang_deadline(config, store, looked_at > 0 ? looked_at : now, now,
                                       next_tick_at - 0.5);
      if (!at) return;
      wake_timer.expires_after(
          std::chrono::milliseconds(static_cast<long>((*at - now + kWakePastDeadline) * 1000)));
      wake_timer.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) replay("a job's hang allowance ran out before the next tick");
      });
    };

    // A followed log printed a crash signature between two ticks (#30: a crash was acted on
    // only at the next tick, 17 s after it at the median, 30 s at worst): the next tick is
    // brought forward, and the ticks go on from it. Its polls are fresh (a requeue's traceback
    // shows as the task back in the queue, as at any tick: the restart waits). Never sooner
    // than half an interval after the last tick: at most two polls in any interval.
    //
    // The line is printed before the task has ended (its process exits after it, then Slurm's
    // cleanup): a cycle at once found it still running, and its restart waited for the next
    // tick (bench/crash_latency.py: 30.7 and 29.8 s of 5 runs). Looked at kEndSettle later.
    constexpr double kEndSettle = 3;
    double last_tick_at = 0;
    auto tick_in = [&](auto in) {
      timer.expires_after(in);
      timer.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) tick();
      });
    };
    std::function<void(const char*)> tick_sooner = [&](const char* why) {
      const double now = unix_now();
      const double at = std::max(now + kEndSettle,
                                 last_tick_at + static_cast<double>(config.interval.count()) / 2);
      if (at >= next_tick_at - 0.5) return;  // the regular tick comes first anyway
      spdlog::info("{}: the next cycle in {:.1f} s, not {:.1f} s", why, at - now,
                   next_tick_at - now);
      next_tick_at = at;
      tick_in(std::chrono::milliseconds(static_cast<long>((at - now) * 1000)));
    };

    // A restart that waits for a crashed task's end (other ranks hanging on, a slow epilog, or
    // a snapshot older than the end) has that task alone asked about every kEndLookEvery
    // (`scontrol show job`, never a poll of the queue), at most kEndLooks times and only until
    // the next tick, after the sampler's crash wake and after as many ticks in a row as bring
    // the next one forward for a wait (kSoonerForWaits: a wait that lasts, for a run the user
    // resubmitted by hand, asks nothing). The cycle that finds it ended, on the snapshot,
    // restarts the run at once (#30: a task that exited at once after a crash naming no node
    // was restarted 7.8-16.6 s after its line, by the tick's phase: its end waited for the poll
    // half an interval on).
    constexpr auto kEndLookEvery = std::chrono::seconds(2);
    constexpr int kEndLooks = 8;
    boost::asio::steady_timer end_look_timer(io);
    int end_looks_left = 0;
    std::function<void()> look_for_ends;
    auto look_later = [&] {
      end_look_timer.expires_after(kEndLookEvery);
      end_look_timer.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) look_for_ends();
      });
    };
    look_for_ends = [&] {
      if (awaited.empty() || !snapshot.queue || end_looks_left <= 0) return;
      --end_looks_left;
      EndsLearned learned;
      try {
        SlurmClient slurm(config.slurm);
        learned = settle_ended(snapshot, slurm, awaited);
      } catch (const std::exception& e) {
        learned.unanswered = static_cast<int>(awaited.size());
        spdlog::warn("cannot ask Slurm whether {} ended: {}", join(awaited, ", "), e.what());
      }
      // A slurmctld that does not answer is left to the next tick: each look blocks the loop
      // for up to [slurm] timeout.
      if (learned.unanswered >= static_cast<int>(awaited.size())) end_looks_left = 0;
      if (learned.ended > 0) {
        replay("a task a restart waits for has ended");
        end_looks_left = std::min(end_looks_left, kEndLooks / 2);  // its next wait, if any
      }
      const auto every = std::chrono::duration<double>(kEndLookEvery).count();
      if (!awaited.empty() && end_looks_left > 0 && unix_now() + every < next_tick_at - 0.5)
        look_later();
    };
    // From a wake on an older snapshot the task may be gone already: asked at once. After a
    // tick, whose poll has just seen it running, a first look later.
    auto watch_ends = [&](bool at_once) {
      end_look_timer.cancel();
      end_looks_left = kEndLooks;
      if (at_once)
        look_for_ends();
      else
        look_later();
    };

    // Between cycles, when the followed logs grew (probes/log_growth.h): a step followed in the
    // same read by a hung rank's heartbeats is then clocked at its own write, not theirs.
    std::function<void()> sample_logs = [&] {
      sample_timer.expires_after(kLogSampleEvery);
      sample_timer.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        try {
          log_growth().sample(std::min<std::chrono::milliseconds>(
              std::chrono::duration_cast<std::chrono::milliseconds>(config.file_timeout),
              std::chrono::seconds(2)));
        } catch (const std::exception& e) {
          spdlog::warn("log growth sample failed: {}", e.what());
        }
        if (auto path = log_growth().take_end_seen()) {
          spdlog::info("{} printed a crash signature", *path);
          // At once, on the tick's snapshot: a crash that names its nodes gets its restart
          // queued behind the dying task (rules/queued_restart.h), which Slurm starts the moment
          // the task is gone; a snapshot that still shows a task gone since cannot start a
          // second run (the queued one waits on it, or starts when Slurm says it failed). The
          // cycle brought forward polls afresh for everything else.
          replay("a followed log printed a crash");
          watch_ends(true);
          tick_sooner("a followed log printed a crash");
        }
        sample_logs();
      });
    };

    // An action that waits (a restart waiting for its crashed task to end: other ranks hanging
    // on, a slow epilog) is looked at again half an interval later, not a whole one: a crash
    // whose task outlived the early tick was restarted only at the next regular one. A few times
    // in a row at most, so that a wait that lasts (a run the user resubmitted by hand) does not
    // double the polls for as long.
    constexpr int kSoonerForWaits = 4;
    int sooner_left = kSoonerForWaits;
    tick = [&] {
      last_tick_at = unix_now();
      CycleResult r;  // stays empty when the cycle did not run
      try {
        cycle_under_lease(config, store, lease, &snapshot, false, &r);
      } catch (const std::exception& e) {
        spdlog::error("cycle failed: {}", e.what());  // the next cycle tries again
        snapshot = {};
      }
      const int waiting = r.waiting;
      awaited = r.awaited;
      looked_at = r.started;
      next_tick_at = unix_now() + static_cast<double>(config.interval.count());
      try {
        schedule_wake();
      } catch (const std::exception& e) {
        spdlog::error("cannot schedule a wake: {}", e.what());
      }
      tick_in(config.interval);
      if (waiting == 0) {
        sooner_left = kSoonerForWaits;
      } else if (sooner_left > 0) {
        --sooner_left;
        tick_sooner("an action waits");
        if (!awaited.empty()) watch_ends(false);  // as few times: a lasting wait asks nothing
      }
    };
    wait_reload = [&] {
      reload_signal.async_wait([&](const boost::system::error_code& ec, int) {
        if (ec) return;
        auto result = load_config_file(config_path);
        apply_job_owners(result, running_as_root(), current_user_name());
        if (result.config) {
          config = *result.config;
          spdlog::info("reloaded {}", config_path);
        } else {
          for (const auto& e : result.errors) spdlog::error("reload refused: {}", e.str());
        }
        wait_reload();
      });
    };
    // Handlers run one at a time: a stop waits for the cycle in progress.
    boost::asio::steady_timer end_timer(io);
    auto stop = [&] {
      timer.cancel();
      wake_timer.cancel();
      sample_timer.cancel();
      end_look_timer.cancel();
      end_timer.cancel();
      reload_signal.cancel();
      http.reset();
      io.stop();
    };
    stop_signals.async_wait([&](const boost::system::error_code&, int sig) {
      spdlog::info("signal {}: stopping after the current cycle", sig);
      stop();
    });
    if (run_for.count() > 0) {
      end_timer.expires_after(run_for);
      end_timer.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        spdlog::info("ran for {}: stopping", format_duration(run_for));
        stop();
      });
    }
    wait_reload();
    spdlog::info("llmwatch daemon: every {}, state in {}", format_duration(config.interval),
                 config.state_dir);
    boost::asio::post(io, tick);
    sample_logs();
    io.run();
    release_lease(store, lease);
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch
