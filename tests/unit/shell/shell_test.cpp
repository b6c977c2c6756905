#include "tests/unit/shell/shell_test.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/shell/io/line_reader.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell::test {

TestLoop::TestLoop() {
    REQUIRE(uv_loop_init(&m_loop) == 0);
}

TestLoop::~TestLoop() {
    if (!m_closed) {
        close();
    }
}

bool TestLoop::run_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    {
        Timer ticker(&m_loop);
        ticker.start(
            5, [] {}, 5);
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            uv_run(&m_loop, UV_RUN_ONCE);
        }
    }
    // Let the ticker's close callback run.
    uv_run(&m_loop, UV_RUN_NOWAIT);
    return done();
}

int TestLoop::close() {
    m_closed = true;
    // Close callbacks of handles destroyed by the test run on the next iterations, and
    // a request the test gave up on while the pool ran it (a cancelled probe's stat)
    // comes back once it ends: polled for up to 2 s. A handle the test leaked keeps
    // the loop alive past that, and uv_loop_close() then fails as it should.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (int i = 0;
         i < 4 || (uv_loop_alive(&m_loop) != 0 && std::chrono::steady_clock::now() < deadline);
         ++i) {
        uv_run(&m_loop, UV_RUN_NOWAIT);
        if (i >= 4) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    int rc = uv_loop_close(&m_loop);
    if (rc != 0) {
        uv_walk(
            &m_loop,
            [](uv_handle_t* handle, void*) {
                MESSAGE("leaked handle: ", uv_handle_type_name(handle->type));
            },
            nullptr);
    }
    return rc;
}

config::ServiceSpec make_spec(std::vector<std::string> command) {
    config::ServiceSpec spec;
    spec.name = "test";
    spec.command = std::move(command);
    return spec;
}

Captured run_to_end(TestLoop& loop, const config::ServiceSpec& spec,
                    std::vector<std::pair<std::string, std::string>> extra_env) {
    Captured captured;
    auto launched = launch(LaunchRequest{&spec, 1, std::move(extra_env)});
    REQUIRE_MESSAGE(launched.has_value(), (launched ? "" : launched.error().message));
    captured.pid = launched->pid;
    int eofs = 0;
    LineReader out(
        loop.get(), [&](std::string_view line) { captured.out.emplace_back(line); },
        [&] { ++eofs; });
    LineReader err(
        loop.get(), [&](std::string_view line) { captured.err.emplace_back(line); },
        [&] { ++eofs; });
    REQUIRE(out.start(launched->stdout_fd).has_value());
    REQUIRE(err.start(launched->stderr_fd).has_value());
    CHECK(loop.run_until([&] { return eofs == 2; }));
    captured.status = wait_for(captured.pid);
    return captured;
}

LaunchFailure launch_failure(const config::ServiceSpec& spec) {
    auto launched = launch(LaunchRequest{&spec, 1, {}});
    if (launched) {
        close(launched->stdout_fd);
        close(launched->stderr_fd);
        wait_for(launched->pid);
        FAIL("the launch was expected to fail");
    }
    return launched.error();
}

TempDir::TempDir() {
    char pattern[] = "/tmp/pkit-shell-test-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    m_path = pattern;
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(m_path, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& content, unsigned mode) {
    std::string file = m_path + "/" + name;
    {
        std::ofstream stream(file, std::ios::binary | std::ios::trunc);
        stream << content;
    }
    chmod(file.c_str(), mode);
    return file;
}

int wait_for(pid_t pid) {
    int status = 0;
    pid_t rc;
    do {
        rc = waitpid(pid, &status, 0);
    } while (rc < 0 && errno == EINTR);
    REQUIRE(rc == pid);
    return status;
}

MixedGroup::MixedGroup() {
    bool odd = false;
    bool even = false;
    while (!(odd && even) || m_pids.size() < 2) {
        pid_t leader = m_pids.empty() ? 0 : m_pids.front();
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::setpgid(0, leader);
            for (;;) {
                ::pause();
            }
        }
        ::setpgid(pid, leader == 0 ? pid : leader);  // both sides: no race
        m_pids.push_back(pid);
        (pid % 2 == 0 ? even : odd) = true;
    }
}

MixedGroup::~MixedGroup() {
    for (pid_t pid : m_pids) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
}

}  // namespace pkit::shell::test
