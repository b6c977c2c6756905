#pragma once
// The table of a Service's state machine (service.hpp): its phases and its inputs,
// named, and what every input does in every phase, in three grids. One machine, three
// tables: a plain service; a start_first service while a replaced run drains beside
// the current one (SPEC §14); a scheduled job (SPEC §12).
//
// tests/unit/core/test_state_grid.cpp enumerates the phases and inputs below (every
// value words_of() names), reads the grids from this file and drives every cell; it
// reads service.hpp too, and fails unless each public member of Service that changes
// it is some input's `member` and each query is part of what it compares. So a phase,
// an input or a member the grids leave out fails it, and no comment can drift.

#include <string_view>

namespace pkit::core {

// The finer form of SPEC §3's State that Service::state() reports (Service::phase()).
// The numbers are the state file's (persist.hpp): a new phase goes last.
enum class Phase {
    waiting,      // wanted up; the Supervisor launches it once `after` is satisfied
    restart_due,  // waiting, for an automatic restart whose delay is over
    starting,     // launched; pid known once spawned; ready probes/notify pending
    cancelled,    // starting, but a stop came before the spawn was reported (pid 0)
    running,      // spawned (and ready, unless a [ready] or a oneshot says otherwise)
    stopping,     // its stop signal sent; SIGKILL at the `kill` deadline
    backoff,      // an automatic restart decided, waiting out its delay
    storm_pause,  // the same, delayed by this service's own storm guard
    storm_hold,   // the same, held by the daemon-wide storm guard (state storm_pause)
    stopped,      // supervision ended (SPEC §5 `stopped` says why) ...
    done,         // ... after a clean end ...
    failed,       // ... or after the gates gave up
    paused,       // a run (starting or running) whose cgroup the operator froze; its
                  // deadlines and probes held until it is resumed (SPEC §15)
};

// A phase's name, and its words in the grids' columns: `starting` has two, `lnch`
// (launched, no pid reported yet) and `strt` (spawned, pid known).
struct PhaseWords {
    std::string_view name;
    std::string_view columns;  // separated by spaces
};

// Empty past the last phase, so that the phases can be counted without a number.
constexpr PhaseWords words_of(Phase phase) {
    switch (phase) {
        case Phase::waiting:
            return {"waiting", "wait"};
        case Phase::restart_due:
            return {"restart_due", "due"};
        case Phase::starting:
            return {"starting", "lnch strt"};
        case Phase::cancelled:
            return {"cancelled", "canc"};
        case Phase::running:
            return {"running", "run"};
        case Phase::stopping:
            return {"stopping", "stop"};
        case Phase::backoff:
            return {"backoff", "back"};
        case Phase::storm_pause:
            return {"storm_pause", "stpa"};
        case Phase::storm_hold:
            return {"storm_hold", "hold"};
        case Phase::stopped:
            return {"stopped", "stpd"};
        case Phase::done:
            return {"done", "done"};
        case Phase::failed:
            return {"failed", "fail"};
        case Phase::paused:
            return {"paused", "paus"};
    }
    return {};
}

// Every way a Service is changed: one a row of each grid. Several inputs can be one
// member function called differently (stop and restart are both stop()).
enum class Input {
    want_up,
    launch,
    spawned,
    launch_failed,
    exit,
    old_exit,
    deadline,
    stop,
    restart,
    hold_until,
    group_restart,
    root_restart,
    replace_run,
    replace_spec,
    set_group,
    forbid_restarts,
    kill_now,
    kill_draining,
    record_output,
    ready_ok,
    ready_failed,
    health_ok,
    health_failed,
    notify,
    pause,
    resume,
    arm,
    disarm,
    tick,
    note_episode,
    replace_schedule,
    replace_log_file,
    restamp,
    restore,
    resumed,
    memory,
};

// An input's row word, the member function of Service it calls, and whether it names
// a run (an input for a run other than the current one changes nothing, anywhere).
struct InputWords {
    std::string_view name;
    std::string_view member;
    bool names_run = false;
};

// Empty past the last input.
constexpr InputWords words_of(Input input) {
    switch (input) {
        case Input::want_up:
            return {"want_up", "want_up"};
        case Input::launch:
            return {"launch", "launch"};
        case Input::spawned:
            return {"spawned", "on_spawned", true};
        case Input::launch_failed:
            return {"launch_failed", "on_launch_failed", true};
        case Input::exit:
            return {"exit", "on_exit", true};
        case Input::old_exit:
            return {"old_exit", "on_exit"};
        case Input::deadline:
            return {"deadline", "on_time"};
        case Input::stop:
            return {"stop", "stop"};
        case Input::restart:
            return {"restart", "stop"};
        case Input::hold_until:
            return {"hold_until", "hold_until"};
        case Input::group_restart:
            return {"group_restart", "restart_by_group"};
        case Input::root_restart:
            return {"root_restart", "restart_by_root"};
        case Input::replace_run:
            return {"replace_run", "begin_replacement"};
        case Input::replace_spec:
            return {"replace_spec", "replace_spec"};
        case Input::set_group:
            return {"set_group", "set_group"};
        case Input::forbid_restarts:
            return {"forbid_restarts", "forbid_restarts"};
        case Input::kill_now:
            return {"kill_now", "kill_now"};
        case Input::kill_draining:
            return {"kill_draining", "kill_draining_now"};
        case Input::record_output:
            return {"record_output", "record_output", true};
        case Input::ready_ok:
            return {"ready_ok", "on_probe_result", true};
        case Input::ready_failed:
            return {"ready_failed", "on_probe_result", true};
        case Input::health_ok:
            return {"health_ok", "on_probe_result", true};
        case Input::health_failed:
            return {"health_failed", "on_probe_result", true};
        case Input::notify:
            return {"notify", "on_notify", true};
        case Input::pause:
            return {"pause", "pause"};
        case Input::resume:
            return {"resume", "resume"};
        case Input::arm:
            return {"arm", "arm"};
        case Input::disarm:
            return {"disarm", "disarm"};
        case Input::tick:
            return {"tick", "on_tick"};
        case Input::note_episode:
            return {"note_episode", "note_episode"};
        case Input::replace_schedule:
            return {"replace_schedule", "replace_schedule"};
        case Input::replace_log_file:
            return {"replace_log_file", "replace_log_file"};
        case Input::restamp:
            return {"restamp", "restamp"};
        case Input::restore:
            return {"restore", "persist"};
        case Input::resumed:
            return {"resumed", "resumed"};
        case Input::memory:
            return {"memory", "on_memory", true};
    }
    return {};
}

// The grids. A cell is the column an input leaves the service in; "-": nothing changes
// (no action, no field); "·": the column stays, with the effects the notes name. Inputs
// for a run other than the current one are "-" everywhere. The columns are the phases'
// words (words_of above), with a suffix in the start_first and schedule grids.
//
// The plain grid: the cells of a plain service (no [ready]: `spawned` makes it running;
// a failed run restarts after a backoff); the notes give the other outcomes.
//
//   input \ phase     wait due  lnch strt canc run  stop back stpa hold stpd done fail paus
//   want_up           -    -    -    -    ·    -    ·    wait wait wait wait wait wait -
//   launch            lnch lnch -    -    -    -    -    -    -    -    -    -    -    -
//   spawned           -    -    run  -    stop -    -    -    -    -    -    -    -    -
//   launch_failed     -    -    back -    stpd -    -    -    -    -    -    -    -    -
//   exit              -    -    -    back -    back stpd -    -    -    -    -    -    back
//   old_exit          -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   deadline          -    -    -    stop -    ·    ·    due  due  due  -    -    -    -
//   stop              stpd stpd canc stop -    stop -    stpd stpd stpd -    -    -    stop
//   restart           -    -    canc stop ·    stop ·    due  due  due  wait wait wait stop
//   hold_until        -    hold -    -    -    -    -    hold hold ·    -    -    -    -
//   group_restart     -    -    -    stop -    stop -    -    -    -    -    -    -    stop
//   root_restart      wait wait canc stop ·    stop ·    wait wait wait wait wait wait stop
//   replace_run       -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   replace_spec      ·    wait ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   set_group         ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   forbid_restarts   ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   kill_now          -    -    -    stop -    stop ·    -    -    -    -    -    -    stop
//   kill_draining     -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   record_output     -    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   ready_ok          -    -    -    run  -    -    -    -    -    -    -    -    -    -
//   ready_failed      -    -    -    ·    -    -    -    -    -    -    -    -    -    -
//   health_ok         -    -    -    -    -    ·    -    -    -    -    -    -    -    -
//   health_failed     -    -    -    -    -    stop -    -    -    -    -    -    -    -
//   notify            -    -    -    run  -    ·    ·    -    -    -    -    -    -    ·
//   pause             -    -    -    paus -    paus -    -    -    -    -    -    -    -
//   resume            -    -    -    -    -    -    -    -    -    -    -    -    -    run
//   arm               -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   disarm            -    -    -    -    -    -    -    -    -    -    -    stpd stpd -
//   tick              -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   note_episode      -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   replace_schedule  ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   replace_log_file  ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   restamp           ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·    ·
//   restore           -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   resumed           -    -    -    -    -    -    -    -    -    -    -    -    -    -
//   memory            -    -    -    ·    -    ·    -    -    -    -    -    -    -    -
//
//   want_up        (operator start, autostart) wanted up; from an end, counters
//                  reset (fresh); a backoff's or pause's rest skipped; stopping or
//                  cancelled: relaunched after the exit (·)
//   launch         the Supervisor launches a waiting service whose `after` is
//                  satisfied: Spawn, run + 1
//   spawned        Emit started; [run_timeout]; no [ready]: ready, running; a oneshot:
//                  running, not ready; with [ready]: strt, [ready_timeout] [ready_probe].
//                  Cancelled: Emit started, then the stop (Signal)
//   launch_failed  Emit exited; the gates. Cancelled: → stpd, or wait to relaunch
//   exit           Emit exited [Cleanup]; stopping by the operator or shutting down:
//                  → stpd (Emit stopped) or wait (relaunch); else the gates
//   the gates      SPEC §3's order decides done | fail (Emit stopped, gave_up,
//                  restarts_exhausted) | back | stpa (Emit storm_pause) | due (no delay);
//                  Emit restarting. A launch failure is a completed run without a
//                  process: it goes through the gates too
//   deadline       (on_time, the phase's deadline due) strt: [run_timeout],
//                  [ready_timeout] → stop, [ready_probe] Probe; run: [run_timeout] →
//                  stop, [health_probe] Probe (·), [watchdog] a failed liveness probe;
//                  stop: [kill] SIGKILL (·); back/stpa/hold: [restart] → due
//   stop           (operator) Signal, [kill]; lnch: cancelled, acted on when the spawn
//                  or its failure is reported; stop: a pkitd kill becomes an operator
//                  stop; a pending restart: cancelled, Emit stopped
//   restart        (stop, then relaunch) as stop, relaunched after the exit (canc: after
//                  the report); a pending automatic restart: launched at once (due); an
//                  end: as want_up
//   hold_until     (the daemon-wide storm guard) a pending restart waits until the
//                  pause's end (hold), or its own if that ends later (stpa)
//   group_restart  (the group's strategy restarts a sibling) counted; as restart
//   root_restart   (the failed group restarts from its root) counted, fresh policy;
//                  as restart when a run exists, else → wait
//   replace_spec   (reload, no process) new spec, fresh counters; due → wait
//   set_group      (reload) the group's name
//   forbid_restarts (shutdown) a run that ends from now on is stopped, never judged
//   kill_now       (the shutdown deadline) SIGKILL; not a crash, not restarted
//   record_output  a line into its run's tail; the current run's searched with
//                  output_matches until it is judged. A service that never ran: "-"
//   ready_ok/failed   a ready probe's result: ready (Emit ready, [health_probe]), or
//                  [ready_probe] again
//   health_ok/failed  a liveness probe's result: the streak (Emit health on a change);
//                  `failures` in a row: Emit liveness_kill, → stop
//   notify         (sd_notify, READY=1 and STATUS=) STATUS kept; READY=1 in strt with
//                  ready.notify: as ready_ok; EXTEND_TIMEOUT_USEC: [ready_timeout]
//                  later; WATCHDOG=1 in run: [watchdog] again, healthy. Paused: STATUS
//                  kept, READY=1 makes the run ready (it resumes running), EXTEND_TIMEOUT_USEC
//                  sets what is left of [ready_timeout]; WATCHDOG=1 waits for the resume
//   pause          (operator; the shell has checked that cgroups are used) strt, run:
//                  Freeze, Emit paused; what is left of [run_timeout] and [ready_timeout]
//                  is kept and every timer disarmed, so no deadline fires and no probe
//                  runs while frozen. Paused already: "-" (pausing is idempotent)
//   resume         (operator) Freeze off, Emit resumed, back to strt or run: the two
//                  deadlines get what was left of them (time frozen does not count
//                  against a run), the probes and the watchdog a fresh period (the next
//                  one an interval after the resume, as after a start). Not paused: "-"
//   paused, left   a stop, restart or kill of a paused run thaws it first (Freeze off,
//                  then the stop signal, which the run can then act on); an exit (a
//                  kill from outside) thaws the cgroup and is judged as in run
//   old_exit, replace_run, kill_draining   start_first's (its grid): a plain service
//                  has no replaced run, and replace_run does nothing for order
//                  stop_first (the Supervisor then restarts the service with stop)
//   arm, tick, note_episode   a scheduled job's (its grid): nothing without `schedule`
//   disarm         a scheduled job's; a done or failed service becomes stopped by the
//                  operator (so `pkitctl stop`, which disarms and stops, says so)
//   replace_schedule (reload: only `schedule` changed) the new schedule; the run goes on
//   replace_log_file (reload: only the log file keys changed) the new keys; the run goes on
//   restamp        (reload: an equal spec) its parse stamp, so the next reload needs no
//                  look; the values stay
//   restore        (the upgrade in place) the state walked out (persist) and into a new
//                  Service of the same spec in the next pkitd: the same service, in
//                  every phase. The Supervisor refuses an upgrade while a launch is in
//                  flight or a replaced run drains (busy_for_upgrade): the state file
//                  holds one run a service, and a replaced run is dropped
//   memory         (SPEC §20) a measurement of the run over [health] memory_max: counted
//                  (·); the second in a row: Emit liveness_kill, → stop (killed_by
//                  memory). At or under it: the count starts again. Paused, stopping: "-"
//   resumed        (after restore) a probe attempt in flight at the hand-over did not
//                  survive it: it is due now. No probe in flight (every column here): "-"
//
// The start_first grid (SPEC §14, `[restart] order`): a ready service with order =
// "start_first" and [ready] notify within 500ms. An operator restart or a reload of a
// ready run launches the new run beside it instead of stopping it (replace_run). The old
// run becomes the replaced run, apart from the phases: it keeps serving while the new
// run goes through waiting, starting and running as any run does. A column is the new
// (current) run's phase with the replaced run's: "/r" it drains until the new run is
// ready (Service::replacing()); "/e" it has had its stop signal (SIGKILL at its own
// deadline) and drains until it exits; no suffix: nothing drains.
//
//   input \ start_first run    wait/r lnch/r strt/r stop/r run/e  stpd/e
//   want_up             -      -      -      -      -      -      wait/e
//   launch              -      lnch/r -      -      -      -      -
//   spawned             -      -      strt/r -      -      -      -
//   launch_failed       -      -      run    -      -      -      -
//   exit                back   wait   -      run    run    back/e stpd
//   old_exit            -      wait   lnch   strt   stop   run    stpd
//   deadline            -      -      -      stop/r ·      ·      ·
//   stop                stop   stpd/e canc/e stop/e stop/e stop/e -
//   restart             stop   -      canc/r stop/r ·      stop/e wait/e
//   hold_until          -      -      -      -      -      -      -
//   group_restart       stop   -      -      stop/r -      stop/e -
//   root_restart        stop   ·      canc/r stop/r ·      stop/e wait/e
//   replace_run         wait/r -      -      -      -      wait/r -
//   replace_spec        ·      ·      ·      ·      ·      ·      ·
//   set_group           ·      ·      ·      ·      ·      ·      ·
//   forbid_restarts     ·      wait/e lnch/e strt/e stop/e ·      ·
//   kill_now            stop   -      -      stop/r ·      stop/e -
//   kill_draining       -      wait/e lnch/e strt/e stop/e ·      ·
//   record_output       ·      ·      ·      ·      ·      ·      ·
//   ready_ok            -      -      -      run/e  -      -      -
//   ready_failed        -      -      -      -      -      -      -
//   health_ok           ·      -      -      -      -      ·      -
//   health_failed       ·      -      -      -      -      ·      -
//   notify              ·      -      -      run/e  ·      ·      -
//   pause               paus   -      -      -      -      -      -
//   resume              -      -      -      -      -      -      -
//   arm                 -      -      -      -      -      -      -
//   disarm              -      -      -      -      -      -      -
//   tick                -      -      -      -      -      -      -
//   note_episode        -      -      -      -      -      -      -
//   replace_schedule    ·      ·      ·      ·      ·      ·      ·
//   replace_log_file    ·      ·      ·      ·      ·      ·      ·
//   restamp             ·      ·      ·      ·      ·      ·      ·
//   restore             -      wait   lnch   strt   stop   run    stpd
//   resumed             -      -      -      -      -      -      -
//   memory              ·      -      -      ·      -      ·      -
//
//   replace_run    (begin_replacement) a ready, running `type = "service"` run with
//                  nothing replacing: the run is the replaced run, the current one a new
//                  run, waiting (fresh counters with a reload's spec). Anything else: "-"
//   new run ready  (spawned without [ready], ready_ok, notify READY=1) Emit ready naming
//                  the replaced run, which gets its stop signal: /r → /e
//   new run ends   (exit, launch_failed, or its ready timeout's stop and then exit) before
//                  it is ready: the replaced run is current again, running and ready
//                  (run), and the Replacement records why; the new run is never judged
//   old_exit       the replaced run's exit (Emit exited, [Cleanup]) ends it only, never
//                  judged. Before the new run is launched (wait/r, stpd/e) the current
//                  run's number is still the replaced run's: `exit` is its exit too
//   stop           (operator) both runs get their stop signal: /e
//   restart, group_restart, root_restart, kill_now   reach the new run only: in /r its
//                  end then restores the replaced run (the Supervisor's restart of a
//                  start_first service tries replace_run first)
//   replace_run in run/e   a second replacement while the first replaced run still ends:
//                  several drain, and only the latest can be restored
//   kill_draining  (the shutdown deadline) SIGKILL to every replaced run: /e
//   forbid_restarts (shutdown) the new run's end no longer restores the replaced run: /e
//   deadline       the current run's, and a replaced run's SIGKILL at its own deadline
//   pause          "-" while a run drains: both runs share the service's cgroup
//
// The schedule grid (SPEC §12; service_schedule.cpp): a oneshot job "every 10s", done
// on exit 0, retried after a failure (fail/a: max_restarts = 0). A column is the job's
// phase with its schedule's: "/a" armed, a tick to come; "/n" armed, but no time comes;
// no suffix: not armed (never, or disarmed). Between episodes the job rests in stopped,
// done or failed, which state() reports as `scheduled` while it is armed; an episode is
// the ordinary life of a oneshot, from want_up to done or failed.
//
//   input \ schedule  stpd   stpd/a stpd/n wait/a run/a  back/a done/a fail/a
//   want_up           wait   wait/a wait/n -      -      wait/a wait/a wait/a
//   launch            -      -      -      lnch/a -      -      -      -
//   spawned           -      -      -      -      -      -      -      -
//   launch_failed     -      -      -      -      -      -      -      -
//   exit              -      -      -      -      back/a -      -      -
//   old_exit          -      -      -      -      -      -      -      -
//   deadline          -      -      -      -      -      due/a  -      -
//   stop              -      -      -      stpd/a stop/a stpd/a -      -
//   restart           wait   wait/a wait/n -      stop/a due/a  wait/a wait/a
//   hold_until        -      -      -      -      -      hold/a -      -
//   group_restart     -      -      -      -      stop/a -      -      -
//   root_restart      wait   wait/a wait/n ·      stop/a wait/a wait/a wait/a
//   replace_run       -      -      -      -      -      -      -      -
//   replace_spec      ·      ·      ·      ·      ·      ·      ·      ·
//   set_group         ·      ·      ·      ·      ·      ·      ·      ·
//   forbid_restarts   ·      ·      ·      ·      ·      ·      ·      ·
//   kill_now          -      -      -      -      stop/a -      -      -
//   kill_draining     -      -      -      -      -      -      -      -
//   record_output     -      -      -      -      ·      ·      ·      ·
//   ready_ok          -      -      -      -      -      -      -      -
//   ready_failed      -      -      -      -      -      -      -      -
//   health_ok         -      -      -      -      ·      -      -      -
//   health_failed     -      -      -      -      ·      -      -      -
//   notify            -      -      -      -      ·      -      -      -
//   pause             -      -      -      -      paus/a -      -      -
//   resume            -      -      -      -      -      -      -      -
//   arm               stpd/a ·      stpd/a ·      ·      ·      ·      ·
//   disarm            -      stpd   stpd   wait   run    back   stpd   stpd
//   tick              -      wait/a -      ·      ·      ·      wait/a wait/a
//   note_episode      ·      ·      ·      ·      ·      ·      ·      ·
//   replace_schedule  ·      ·      ·      ·      ·      ·      ·      ·
//   replace_log_file  ·      ·      ·      ·      ·      ·      ·      ·
//   restamp           ·      ·      ·      ·      ·      ·      ·      ·
//   restore           -      -      -      -      -      -      -      -
//   resumed           -      -      -      -      -      -      -      -
//   memory            -      -      -      -      ·      -      -      -
//
//   arm            armed for the next tick, or for none (nullopt: no time comes; armed
//                  all the same); armed already: the tick replaced
//   disarm         no more ticks; between episodes (done, fail) the job is stopped by
//                  the operator; an episode in progress goes on
//   tick           (the tick due on the monotonic clock) between episodes: `next` armed,
//                  and an episode starts with fresh counters (as want_up); an episode in
//                  progress: the tick is missed (counted, Emit missed). A cron tick whose
//                  wall time has not come (the clock was set back) waits on (·)
//   note_episode   (an operator start or restart between episodes) the episode's start
//                  time kept as the latest episode's
//   the end        of an episode (done, fail): its result kept, and `after` is met once
//                  one has ended done
//   stop, deadline   the run's only: the Supervisor disarms before it stops a job, and
//                  fires a due tick with `tick`

}  // namespace pkit::core
