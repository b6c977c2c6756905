// Safe configuration reading: a FIFO, a link to /dev/zero, a directory named
// x.toml or a `services` symlink loop is refused with a positioned error by
// `pkitctl reload`, SIGHUP and `pkitd --check`, without hanging or growing pkitd, and
// nothing changes. A reload is read on a worker thread: the loop keeps serving.

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <functional>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// One kind of file pkitd must refuse to read: how to make it, and the error line
// (FILE relative to DIR) it must give.
struct Hazard {
    std::string what;
    std::function<void(const TempDir&)> make;
    std::string error;  // "services/x.toml:1:1: error: ..."
};

std::vector<Hazard> hazards() {
    const std::string only_regular = "): only regular files are read";
    return {
        {"a FIFO named services/x.toml",
         [](const TempDir& dir) {
             REQUIRE(::mkfifo(dir.file("services/x.toml").c_str(), 0644) == 0);
         },
         "services/x.toml:1:1: error: not a regular file (a FIFO" + only_regular},
        {"services/x.toml linked to /dev/zero",
         [](const TempDir& dir) { fs::create_symlink("/dev/zero", dir.file("services/x.toml")); },
         "services/x.toml:1:1: error: not a regular file (a character device" + only_regular},
        {"a directory named services/x.toml",
         [](const TempDir& dir) { fs::create_directory(dir.file("services/x.toml")); },
         "services/x.toml:1:1: error: not a regular file (a directory" + only_regular},
        {"a services directory that is a symlink loop",
         [](const TempDir& dir) {
             fs::rename(dir.file("services"), dir.file("services.old"));
             fs::create_symlink("services", dir.file("services"));
         },
         "services:1:1: error: cannot read the services directory: Too many levels of symbolic "
         "links"},
    };
}

// pkitd answers ping and status on a fresh connection, within a generous deadline.
void check_serving(Daemon& pkitd) {
    Client client = pkitd.client();
    json pong = client.command("ping", 10s);
    CHECK_MESSAGE(pong["ok"] == true, pong.dump());
    json web = status(client, "web");
    CHECK(web["state"] == "running");
}

}  // namespace

TEST_CASE("a reload that meets a FIFO, /dev/zero, a directory or a services loop is refused") {
    for (const Hazard& hazard : hazards()) {
        for (bool by_signal : {false, true}) {
            CAPTURE(hazard.what);
            CAPTURE(by_signal);
            TempDir dir;
            dir.service("web", runner_toml());
            Daemon pkitd(dir);
            pkitd.wait_ready();
            Client client = pkitd.client();
            json before = wait_status(client, "web", state_is("running"), 10s, "web runs");
            hazard.make(dir);
            const std::string line = dir.str() + "/" + hazard.error;

            if (by_signal) {
                pkitd.signal(SIGHUP);
                wait_for([&] { return pkitd.log().find(line) != std::string::npos; }, 10s,
                         "the positioned error in the log", [&] { return pkitd.log(); });
                CHECK(pkitd.log().find("reload: invalid configuration, nothing changed") !=
                      std::string::npos);
            } else {
                CommandResult r = run_ctl({"--socket", pkitd.socket(), "reload"}, 20s);
                CHECK_MESSAGE(r.exit_code == 1, r.all());
                CHECK_MESSAGE(r.err.find("invalid_config") != std::string::npos, r.all());
                CHECK_MESSAGE(r.err.find(line + "\n") != std::string::npos, r.all());
            }
            check_serving(pkitd);
            json now = status(client, "web");
            CHECK(now["pid"] == before["pid"]);
            CHECK(now["run"] == 1);

            // The same tree, checked on its own: exit 2, the same error.
            CommandResult check = run_pkitd({"--check", "--config", dir.str()}, 20s);
            CHECK_MESSAGE(check.exit_code == 2, check.all());
            CHECK_MESSAGE(check.err.find(line + "\n") != std::string::npos, check.all());
            CHECK(pkitd.stop() == 0);
        }
    }
}

TEST_CASE("pkitd refuses to start on a FIFO or an oversized service file, with the error") {
    TempDir dir;
    dir.service("web", runner_toml());
    REQUIRE(::mkfifo(dir.file("services/x.toml").c_str(), 0644) == 0);
    dir.service("big", "command = [\"x\"]\n#" + std::string(1024 * 1024, 'x') + "\n");
    CommandResult r = run_pkitd({"--config", dir.str(), "--socket", dir.file("pkitd.sock")}, 20s);
    CHECK_MESSAGE(r.exit_code == 2, r.all());
    CHECK_MESSAGE(r.err.find(dir.str() + "/services/big.toml:1:1: error: the file is 1048594 "
                                         "bytes, over the limit of 1048576 bytes (1 MiB)\n") !=
                      std::string::npos,
                  r.all());
    CHECK_MESSAGE(
        r.err.find(dir.str() + "/services/x.toml:1:1: error: not a regular file (a "
                               "FIFO): only regular files are read\n") != std::string::npos,
        r.all());
}

// The reload's files are read on a worker thread: while it reads a large tree, a
// status request on another connection is answered before the reload's reply. (Read
// on the loop, the status request would wait for the whole reload, and the reload's
// reply would always come first.)
TEST_CASE("status is answered on another connection while a reload reads the tree") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client watcher = pkitd.client();
    wait_status(watcher, "web", state_is("running"), 10s, "web runs");
    // Enough services that reading them takes a while; none starts (autostart off).
    const int count = 20000;
    for (int i = 0; i < count; ++i) {
        write_file(dir.path() / "services" / ("idle" + std::to_string(i) + ".toml"),
                   "command = [\"/bin/true\"]\nautostart = false\n");
    }
    Client reloader = pkitd.client();
    reloader.send_raw("{\"id\": 1, \"cmd\": \"reload\"}\n");
    int answered_meanwhile = 0;
    std::optional<json> reply;
    const auto deadline = Clock::now() + 120s;
    while (!reply && Clock::now() < deadline) {
        CHECK(status(watcher, "web")["state"] == "running");
        // Whatever has arrived by now (a reply written before the status reply is
        // already in the socket: a short poll sees it).
        reply = reloader.read_json(Clock::now() + 5ms);
        if (!reply) {
            ++answered_meanwhile;
            reply = reloader.read_json(Clock::now() + 20ms);
        }
    }
    REQUIRE_MESSAGE(reply.has_value(), "no reply to reload");
    CHECK_MESSAGE((*reply)["ok"] == true, reply->dump());
    CHECK((*reply)["result"]["added"].size() == static_cast<std::size_t>(count));
    CHECK_MESSAGE(answered_meanwhile > 0, "no status answered while the reload was being read");
    CHECK(status(watcher, "web")["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("reloads asked for while one is read are all answered, and shutdown meanwhile is safe") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    for (int i = 0; i < 2000; ++i) {
        write_file(dir.path() / "services" / ("idle" + std::to_string(i) + ".toml"),
                   "command = [\"/bin/true\"]\nautostart = false\n");
    }
    std::vector<Client> clients;
    for (int i = 0; i < 4; ++i) {
        clients.push_back(pkitd.client());
        clients.back().send_raw("{\"id\": 1, \"cmd\": \"reload\"}\n");
    }
    pkitd.signal(SIGHUP);
    int added = 0;
    for (Client& c : clients) {
        auto reply = c.read_json(Clock::now() + 60s);
        REQUIRE_MESSAGE(reply.has_value(), "a reload was not answered");
        CHECK_MESSAGE((*reply)["ok"] == true, reply->dump());
        added += static_cast<int>((*reply)["result"]["added"].size());
    }
    CHECK(added == 2000);  // the first read added them; later ones found them unchanged

    // A reload under way when pkitd is told to stop: it exits 0 as usual.
    Client last = pkitd.client();
    dir.service("extra", "command = [\"/bin/true\"]\nautostart = false\n");
    last.send_raw("{\"id\": 1, \"cmd\": \"reload\"}\n");
    CHECK(pkitd.stop() == 0);
}
