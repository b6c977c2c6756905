// The README's zero-downtime example with Debian's gunicorn (SPEC §14, §21): a reload
// to an application that fails to load. With an http [ready] probe of the service's own
// port the old gunicorn answers it, so the working run is stopped and the broken one
// crash-loops; with `notify = true` and `--preload` (the documented example) the old
// gunicorn keeps serving and `pkitctl reload` exits 1 naming the service.

#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The app (module `app`) and an application that fails to load (module `broken`).
void write_apps(const TempDir& dir) {
    write_file(dir.path() / "app.py",
               "def application(environ, start_response):\n"
               "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
               "    return [b'ok']\n");
    write_file(dir.path() / "broken.py", "raise ImportError('a broken deploy')\n");
}

// web.toml: gunicorn serving `module` from pkitd's socket on `port`, with `ready`.
std::string web_toml(const TempDir& dir, int port, const std::string& module,
                     const std::string& preload, const std::string& ready) {
    return "command = [\"gunicorn\", " + preload + "\"--workers\", \"1\", \"--chdir\", " +
           toml_str(dir.str()) + ", \"--graceful-timeout\", \"5\", \"" + module +
           ":application\"]\n[[listen]]\ntcp = \"0.0.0.0:" + std::to_string(port) +
           "\"\n[restart]\norder = \"start_first\"\n[ready]\n" + ready +
           "\ntimeout = \"20s\"\n[stop]\ntimeout = \"10s\"\n[output]\nforward = \"none\"\n";
}

}  // namespace

TEST_CASE(
    "gunicorn with an http [ready] probe of its own port: a broken reload stops the "
    "working run") {
    REQUIRE_MESSAGE(have_program("gunicorn"), "gunicorn is not installed (make test installs it)");
    TempDir dir;
    write_apps(dir);
    const int port = unused_port();
    const std::string ready = "http = \"http://127.0.0.1:" + std::to_string(port) + "/\"";
    dir.service("web", web_toml(dir, port, "app", "", ready));
    // The example as the README had it: --check says what is wrong with it.
    const auto check = run_pkitd({"--config", dir.str(), "--check"});
    CHECK_MESSAGE(check.all().find("warning: ready.http: ") != std::string::npos, check.all());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 30s, "gunicorn is ready");
    REQUIRE(get_ok(port));

    dir.service("web", web_toml(dir, port, "broken", "", ready));
    const auto result = ctl(pkitd, {"reload"}, 60s);
    CHECK(result.exit_code == 0);  // the probe said the new run was ready
    // (pkitd's log is written as the reply goes out: polled, not read once.)
    wait_for(
        [&] { return pkitd.log().find("web: run 2 ready, stopping run 1") != std::string::npos; },
        10s, "the old run answered the new run's probe");
    // The working gunicorn is gone and the new one cannot boot a worker: it crash-loops.
    wait_status(
        client, "web",
        [](const json& s) { return s["draining_pid"].is_null() && s["last_exit"].is_object(); },
        60s, "the broken gunicorn exited");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE(
    "gunicorn --preload with [ready] notify: a broken reload keeps the old run serving "
    "and pkitctl reload exits 1") {
    REQUIRE_MESSAGE(have_program("gunicorn"), "gunicorn is not installed (make test installs it)");
    TempDir dir;
    write_apps(dir);
    const int port = unused_port();
    dir.service("web", web_toml(dir, port, "app", "\"--preload\", ", "notify = true"));
    const auto check = run_pkitd({"--config", dir.str(), "--check"});
    CHECK(check.exit_code == 0);
    CHECK_MESSAGE(check.all().find("warning") == std::string::npos, check.all());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "web", state_is("running"), 30s, "gunicorn is ready");
    REQUIRE(get_ok(port));

    dir.service("web", web_toml(dir, port, "broken", "\"--preload\", ", "notify = true"));
    SteadyClient load([port] { return get_ok(port); });
    const auto result = ctl(pkitd, {"reload"}, 60s);
    load.stop();
    CHECK_MESSAGE(result.exit_code == 1, result.all());
    CHECK(result.err.find("pkitctl: web: its new run failed: run 2 exited with code ") !=
          std::string::npos);
    CHECK(result.err.find("run 1 keeps running") != std::string::npos);
    CHECK(load.failed() == 0);
    CHECK(load.served() > 0);
    json after = status(client, "web");
    CHECK(after["pid"] == before["pid"]);
    CHECK(after["state"] == "running");
    CHECK(get_ok(port));

    // The fixed deploy goes through, and the reload says so.
    dir.service("web", web_toml(dir, port, "app", "\"--preload\", \"--workers\", \"1\", ",
                                "notify = true"));
    const auto fixed = ctl(pkitd, {"reload"}, 60s);
    CHECK_MESSAGE(fixed.exit_code == 0, fixed.all());
    CHECK(status(client, "web")["run"] == 3);
    CHECK(get_ok(port));
    CHECK(pkitd.stop() == 0);
}
