#pragma once
// The integration harness: everything a case needs to drive the real pkitd and pkitctl.
//
//   TempDir dir;                                  // the case's config dir and marker
//   dir.service("web", sh_command("exit 1"));     // DIR/services/web.toml
//   Daemon pkitd(dir);                            // PKITD_BIN --config DIR --socket DIR/pkitd.sock
//   pkitd.wait_ready();
//   Client client = pkitd.client();
//   wait_status(client, "web", state_is("failed"), 5s, "supervision ends");
//   CHECK(pkitd.stop() == 0);
//
// Cases are independent (own dir, own socket), so ctest runs them in parallel. Case
// names must not contain ";": doctest_discover_tests would split them into two
// entries that each match no case and pass without running anything.

#include "tests/integration/harness_client.hpp"
#include "tests/integration/harness_daemon.hpp"
#include "tests/integration/harness_doctest.hpp"
#include "tests/integration/harness_files.hpp"
#include "tests/integration/harness_proc.hpp"
#include "tests/integration/harness_process.hpp"
#include "tests/integration/harness_wait.hpp"

namespace pkit::itest {

// A case that cannot run here says why and returns: doctest has no "skipped".
#define PKIT_SKIP(reason)               \
    do {                                \
        MESSAGE("skipped: " << reason); \
        return;                         \
    } while (false)

// "[restart]" settings for timing cases: no jitter, the given backoff.
std::string restart_table(const std::string& policy, const std::string& backoff_initial,
                          double factor = 2.0, int max_restarts = -1);

// The terminal columns of the widest line of `screen` (UTF-8 code points; '\r' ignored):
// what a terminal showed fits its width.
std::size_t widest_line(const std::string& screen);

// The last_exit object of a status, or fails the case when it is null.
json last_exit(const json& status);

// A long-running service (`seconds` tells definitions apart) with a short stop timeout;
// the quick-restart one also restarts after 50 ms, without jitter.
std::string runner_toml(const std::string& seconds = "1000");
std::string quick_restart_runner_toml(const std::string& seconds = "1000");

// Runs pkitctl against `pkitd`'s socket.
CommandResult ctl(const Daemon& pkitd, std::vector<std::string> args,
                  std::chrono::milliseconds timeout = std::chrono::seconds(20),
                  const std::vector<std::string>& env = {});

// Whether the event `e` is of `type` and names `service`.
bool is_event(const json& e, const std::string& type, const std::string& service);

// SIGKILL to `name`'s run, through the control socket (the request must succeed).
void kill_service(Client& client, const std::string& name);
// Waits until `name` is running its run `run`; returns its status.
json wait_running(Client& client, const std::string& name, int run = 1,
                  std::chrono::milliseconds within = std::chrono::seconds(15));
// A reload request that must succeed; returns its result.
json reload(Client& client);

// The lines of `text`, every one / without the empty ones.
std::vector<std::string> lines_of(const std::string& text);
std::vector<std::string> nonempty_lines(const std::string& text);

// Configures `dir`'s pkitd.toml with `more` and an HTTP endpoint on a free loopback
// port; returns the port.
int with_http(const TempDir& dir, const std::string& more = "");

}  // namespace pkit::itest

namespace pkit::itest {

// For each `started` event of `service` that follows an `exited` one: the time from
// that exit to the start, in seconds (the observed backoff delay), in order.
std::vector<double> exit_to_start_gaps(const std::vector<json>& events, const std::string& service);
// The `delay` of each `restarting` event of `service`, in order.
std::vector<double> restart_delays(const std::vector<json>& events, const std::string& service);
// "[0.1, 0.2]" for messages.
std::string to_string(const std::vector<double>& values);

// A shell fragment that blocks until DIR/go exists: the first run of a timing case
// waits there, so the case can subscribe to events before anything is timed.
std::string gate(const TempDir& dir);
// Creates DIR/go.
void open_gate(const TempDir& dir);

}  // namespace pkit::itest
