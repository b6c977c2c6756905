// A real program that speaks socket activation (SPEC §14): Debian's gunicorn takes the
// socket pkitd holds from LISTEN_FDS, and start_first restarts under a steady client
// lose no request. `make test` installs gunicorn.

#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {}  // namespace

TEST_CASE("gunicorn serves from pkitd's socket through start_first restarts without a failure") {
    REQUIRE_MESSAGE(have_program("gunicorn"), "gunicorn is not installed (make test installs it)");
    TempDir dir;
    const int port = unused_port();
    write_file(dir.path() / "app.py",
               "def application(environ, start_response):\n"
               "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
               "    return [b'ok']\n");
    dir.service("web", "command = [\"gunicorn\", \"--workers\", \"1\", \"--chdir\", " +
                           toml_str(dir.str()) +
                           ", \"--graceful-timeout\", \"5\", \"app:application\"]\n"
                           "[[listen]]\ntcp = \"127.0.0.1:" +
                           std::to_string(port) +
                           "\"\n[restart]\norder = \"start_first\"\n"
                           "[ready]\nhttp = \"http://127.0.0.1:" +
                           std::to_string(port) +
                           "/\"\ntimeout = \"20s\"\n[stop]\ntimeout = \"10s\"\n"
                           "[output]\nforward = \"none\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 30s, "gunicorn is ready");
    REQUIRE(get_ok(port));

    SteadyClient load([port] { return get_ok(port); });
    for (int i = 0; i < 3; ++i) {
        json reply = client.request({{"cmd", "restart"}, {"services", {"web"}}});
        CHECK_MESSAGE(reply["ok"] == true, reply.dump());
    }
    load.stop();
    CHECK(load.failed() == 0);
    CHECK(load.served() > 0);
    json st = status(client, "web");
    CHECK(st["run"] == 4);
    CHECK(st["state"] == "running");
    CHECK(pkitd.stop() == 0);
}
