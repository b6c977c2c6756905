#pragma once
// Waiting on conditions with deadlines: a case never asserts after a fixed sleep, it
// polls what it expects and fails with what it last saw.

#include <chrono>
#include <functional>
#include <string>

#include "tests/integration/harness_client.hpp"

namespace pkit::itest {

using namespace std::chrono_literals;

// How often conditions are polled.
inline constexpr std::chrono::milliseconds k_poll_interval{15};

// Polls `cond` until it holds; on timeout fails the case with `what` and, when given,
// observe() (the last observed value).
void wait_for(const std::function<bool()>& cond, std::chrono::milliseconds timeout,
              const std::string& what, const std::function<std::string()>& observe = {});

// Polls the status of service `name` until `pred` holds and returns that status; on
// timeout fails the case with `what` and the last status seen.
json wait_status(Client& client, const std::string& name,
                 const std::function<bool(const json&)>& pred, std::chrono::milliseconds timeout,
                 const std::string& what);

// Shorthand predicates on a service status.
std::function<bool(const json&)> state_is(const std::string& state);
std::function<bool(const json&)> run_at_least(int run);
// `kills` liveness kills counted and the killed run ended (the kill is counted when it
// is decided, last_exit is set only once the process has exited).
std::function<bool(const json&)> liveness_killed(int kills);

// Waits until a file exists (a service's "I got this far" marker).
void wait_file(const std::string& path, std::chrono::milliseconds timeout = 10s);

// Seconds elapsed since `start`, as a double.
double seconds_since(Clock::time_point start);

}  // namespace pkit::itest
