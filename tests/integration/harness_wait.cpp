#include "tests/integration/harness_wait.hpp"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "tests/integration/harness_doctest.hpp"

namespace pkit::itest {

void wait_for(const std::function<bool()>& cond, std::chrono::milliseconds timeout,
              const std::string& what, const std::function<std::string()>& observe) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (cond()) {
            return;
        }
        if (Clock::now() >= deadline) {
            break;
        }
        std::this_thread::sleep_for(k_poll_interval);
    }
    FAIL("timed out after " << timeout.count() << " ms waiting for " << what
                            << (observe ? "; last observed: " + observe() : std::string()));
}

json wait_status(Client& client, const std::string& name,
                 const std::function<bool(const json&)>& pred, std::chrono::milliseconds timeout,
                 const std::string& what) {
    json last;
    wait_for(
        [&] {
            last = status(client, name);
            return pred(last);
        },
        timeout, name + ": " + what, [&] { return last.dump(); });
    return last;
}

std::function<bool(const json&)> state_is(const std::string& state) {
    return [state](const json& s) { return s.value("state", "") == state; };
}

std::function<bool(const json&)> run_at_least(int run) {
    return [run](const json& s) { return s.value("run", 0) >= run; };
}

std::function<bool(const json&)> liveness_killed(int kills) {
    return [kills](const json& s) {
        // killed_by is null in the last exit of a run that was not killed.
        return s.value("liveness_kills", 0) >= kills && s.contains("last_exit") &&
               s["last_exit"].is_object() && s["last_exit"]["killed_by"] == "liveness";
    };
}

void wait_file(const std::string& path, std::chrono::milliseconds timeout) {
    wait_for([&] { return std::filesystem::exists(path); }, timeout, "file " + path);
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace pkit::itest
