#pragma once
// Test helpers for the functional core: a Now builder on a fake clock, a spec and tree
// builder with deterministic defaults, wait statuses, and a one-line trace of an
// action list so a test can assert the exact actions with a readable diff.

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/model.hpp"
#include "config/values.hpp"
#include "daemon/core/service.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/core/types.hpp"

namespace pkit::core::test {

using namespace std::chrono_literals;

// `seconds` after the fake clock's epoch. Wall time runs 1000 s ahead of the monotonic
// clock, so a test can tell the two apart.
inline Now at(double seconds) {
    // Rounded, so at(1.2) is exactly at(1) plus 200ms.
    Duration offset = std::chrono::round<Duration>(std::chrono::duration<double>(seconds));
    return Now{TimePoint{} + offset, 1000.0 + seconds};
}

inline TimePoint mono(double seconds) {
    return at(seconds).mono;
}

using config::to_seconds;

// Seconds since the fake epoch, for deadlines.
inline std::optional<double> seconds(std::optional<TimePoint> t) {
    if (!t) {
        return std::nullopt;
    }
    return to_seconds(t->time_since_epoch());
}

// How a main process ended, as the shell decodes its wait status.
inline ProcessExit exited(int code) {
    return ProcessExit{code & 0xff, std::nullopt};
}
inline ProcessExit killed(int signal) {
    return ProcessExit{std::nullopt, signal};
}

// A pattern known to be valid (an invalid one throws: a test bug).
inline config::Pattern pattern(std::string source) {
    return config::Pattern::compile(std::move(source)).value();
}

// A service that runs /bin/false, with jitter off so every delay is exact.
inline config::ServiceSpec spec(std::string name) {
    config::ServiceSpec s;
    s.name = std::move(name);
    s.file = "services/" + s.name + ".toml";
    s.command = {"/bin/false"};
    s.restart.jitter = false;
    return s;
}

inline config::ServiceSpec spec_after(std::string name, std::vector<std::string> after) {
    config::ServiceSpec s = spec(std::move(name));
    s.after = std::move(after);
    return s;
}

// A tree of `services`, sorted into name order as the loader leaves them.
inline config::Tree tree(std::vector<config::ServiceSpec> services) {
    config::Tree t;
    t.dir = "/etc/pkit";
    std::sort(services.begin(), services.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    t.services = std::move(services);
    return t;
}

inline std::string signal_text(int signal) {
    switch (signal) {
        case SIGTERM:
            return "TERM";
        case SIGKILL:
            return "KILL";
        case SIGINT:
            return "INT";
        case SIGHUP:
            return "HUP";
        case SIGQUIT:
            return "QUIT";
        case SIGUSR1:
            return "USR1";
        default:
            return std::to_string(signal);
    }
}

// Whole milliseconds, rounded: jittered delays are not whole nanoseconds.
inline std::string ms_text(Duration d) {
    return std::to_string(std::chrono::round<std::chrono::milliseconds>(d).count()) + "ms";
}

std::string describe(const Event& e);
std::string describe(const Action& a);

// The actions as one line, " | " between them.
std::string trace(const std::vector<Action>& actions);

// The actions of type T, in order.
template <class T>
std::vector<T> only(const std::vector<Action>& actions) {
    std::vector<T> found;
    for (const Action& a : actions) {
        if (const T* t = std::get_if<T>(&a)) {
            found.push_back(*t);
        }
    }
    return found;
}

inline std::vector<Event> events(const std::vector<Action>& actions) {
    std::vector<Event> found;
    for (const EmitAction& e : only<EmitAction>(actions)) {
        found.push_back(e.event);
    }
    return found;
}

inline std::vector<Event> events_of(const std::vector<Action>& actions, EventType type) {
    std::vector<Event> found;
    for (const Event& e : events(actions)) {
        if (e.type == type) {
            found.push_back(e);
        }
    }
    return found;
}

// A Supervisor over `services` whose jitter draw is always 0.5 (j = 1).
inline Supervisor supervisor(std::vector<config::ServiceSpec> services,
                             config::DaemonSpec daemon = {}) {
    config::Tree t = tree(std::move(services));
    t.daemon = std::move(daemon);
    return Supervisor(std::move(t), [] { return 0.5; });
}

// The supervisor's pending actions as a trace.
inline std::string take(Supervisor& sup) {
    return trace(sup.take_actions());
}

// Drives one Service by hand, collecting its actions. Jitter draws are 0.5 (j = 1).
struct Driver {
    Service svc;
    Actions out;
    pid_t next_pid = 100;

    explicit Driver(config::ServiceSpec s) : svc(std::move(s), 0, std::nullopt) {}

    // The actions so far as a trace, and forgets them.
    std::string take() {
        std::string t = trace(out);
        out.clear();
        return t;
    }
    // want_up + launch + spawned: the service is running its next run.
    pid_t start(Now now) {
        svc.want_up(now, out, true);
        return relaunch(now);
    }
    // launch + spawned from `waiting`.
    pid_t relaunch(Now now) {
        svc.launch(now, out);
        pid_t pid = next_pid++;
        svc.on_spawned(svc.run(), pid, now, out);
        return pid;
    }
    // The Outcomes are the Supervisor's to read (test_state_table checks them).
    void exit(Now now, const ProcessExit& status) {
        static_cast<void>(svc.on_exit(svc.run(), status, now, out, 0.5));
    }
    void fail_launch(Now now, config::LaunchError kind, std::string message) {
        static_cast<void>(svc.on_launch_failed(svc.run(), LaunchFailure{kind, std::move(message)},
                                               now, out, 0.5));
    }
    // Lets the backoff run out and starts the next run.
    pid_t after_backoff(Now now) {
        svc.on_time(now, out);
        return relaunch(now);
    }
};

}  // namespace pkit::core::test
