#pragma once
// Shared by every file of pkit_unit_shell: doctest (implemented once, in main.cpp),
// a real libuv loop per test that must close cleanly, and small helpers to launch
// /bin/sh children and collect their output.
#include <doctest/doctest.h>

#include <sys/types.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "daemon/shell/launch/launcher.hpp"

// Readable failure messages for the line lists the tests compare.
namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
    static String convert(const std::vector<std::string>& lines) {
        std::string text = "[";
        for (const auto& line : lines) {
            text += (text.size() > 1 ? ", \"" : "\"") + line.substr(0, 200) + "\"";
        }
        return String((text + "]").c_str());
    }
};
}  // namespace doctest

namespace pkit::shell::test {

using namespace std::chrono_literals;

// One loop for one test. close() runs the loop until every closed handle is freed and
// returns uv_loop_close's result, which must be 0: a leaked handle fails the test.
class TestLoop {
public:
    TestLoop();
    ~TestLoop();
    TestLoop(const TestLoop&) = delete;
    TestLoop& operator=(const TestLoop&) = delete;

    uv_loop_t* get() { return &m_loop; }

    // Runs the loop until `done()` holds or `limit` passes; returns done(). A 5 ms
    // ticker keeps the loop waking so the condition is rechecked without sleeps.
    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s);

    int close();

private:
    uv_loop_t m_loop;
    bool m_closed = false;
};

// A spec that runs `command` with everything else at its defaults.
config::ServiceSpec make_spec(std::vector<std::string> command);

// What a finished child left behind.
struct Captured {
    pid_t pid = -1;
    std::vector<std::string> out;
    std::vector<std::string> err;
    int status = -1;  // raw wait status
};

// Launches `spec` (which must succeed), reads both pipes through LineReaders until EOF,
// then waits for the child.
Captured run_to_end(TestLoop& loop, const config::ServiceSpec& spec,
                    std::vector<std::pair<std::string, std::string>> extra_env = {});

// Launches `spec`, which must fail, and returns the failure.
LaunchFailure launch_failure(const config::ServiceSpec& spec);

// A fresh directory under /tmp, removed with its contents by the destructor.
class TempDir {
public:
    TempDir();
    ~TempDir();
    const std::string& path() const { return m_path; }
    // Writes `content` to `name` in the directory with `mode`; returns the full path.
    std::string write(const std::string& name, const std::string& content, unsigned mode = 0644);

private:
    std::string m_path;
};

// Blocking waitpid for a child known to be ending; returns the raw status.
int wait_for(pid_t pid);

// A process group of paused children with pids of both parities (a resources pass on
// two threads splits the pids odd and even), killed and reaped by the destructor.
class MixedGroup {
public:
    MixedGroup();
    ~MixedGroup();
    MixedGroup(const MixedGroup&) = delete;
    MixedGroup& operator=(const MixedGroup&) = delete;

    pid_t pgid() const { return m_pids.front(); }
    std::size_t size() const { return m_pids.size(); }

private:
    std::vector<pid_t> m_pids;
};

}  // namespace pkit::shell::test
