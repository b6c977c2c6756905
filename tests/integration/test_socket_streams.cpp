// Streaming requests over the control socket (SPEC §9) and the pkitctl commands built on
// them (SPEC §10): `events`, `logs` with `follow`, `signal`, `explain`.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::string events_of(const std::vector<json>& events) {
    std::string out;
    for (const auto& e : events) {
        out += e.dump() + "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("socket stream: events deliver started then exited then restarting for a crash") {
    TempDir dir;
    dir.service("svc", sh_command("sleep 0.2; exit 1") + restart_table("always", "200ms"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());

    // The first start may precede the subscription: wait for a full cycle after a start.
    int stage = 0;  // 0: waiting for started, 1: for exited, 2: for restarting
    json started, exited, restarting;
    events.until(
        [&](const json& e) {
            if (e.value("service", json()) != "svc") {
                return false;
            }
            const std::string type = e.value("type", "");
            if (stage == 0 && type == "started") {
                started = e;
                stage = 1;
            } else if (stage == 1 && type == "ready") {
                return false;  // readiness may be reported in between
            } else if (stage == 1) {
                REQUIRE_MESSAGE(type == "exited", "after started: " << e.dump());
                exited = e;
                stage = 2;
            } else if (stage == 2) {
                REQUIRE_MESSAGE(type == "restarting", "after exited: " << e.dump());
                restarting = e;
                return true;
            }
            return false;
        },
        8s, "started, exited, restarting for svc");
    INFO("events:\n" << events_of(events.seen()));
    CHECK(started["pid"].is_number_integer());
    CHECK(started["run"].is_number_integer());
    CHECK(started.contains("group"));
    CHECK(started["group"].is_null());
    CHECK(started["at"].is_number());
    CHECK(exited["code"] == 1);
    CHECK(exited["signal"].is_null());
    CHECK(exited["duration"].get<double>() >= 0.15);
    CHECK(restarting["delay"].is_number());
    CHECK(restarting["restart"].is_number_integer());
    CHECK(exited["at"].get<double>() >= started["at"].get<double>());
    CHECK(restarting["at"].get<double>() >= exited["at"].get<double>());

    // The next run follows: started again with a higher run number.
    json next = events.until(
        [](const json& e) {
            return e.value("service", json()) == "svc" && e.value("type", "") == "started";
        },
        5s, "the restart's started event");
    CHECK(next["run"].get<long>() > started["run"].get<long>());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket stream: logs follow replies with the tail then streams new lines") {
    TempDir dir;
    dir.service("ticker", sh_command("i=0; while true; do i=$((i+1)); echo tick $i; "
                                     "sleep 0.1; done"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for(
        [&] {
            json r = client.request({{"cmd", "logs"}, {"service", "ticker"}});
            return r["ok"] == true && r["result"]["lines"].size() >= 3;
        },
        5s, "three lines in the log");

    Client follower = pkitd.client();
    json reply = follower.request(
        {{"id", "f"}, {"cmd", "logs"}, {"service", "ticker"}, {"lines", 5}, {"follow", true}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    const auto tail = texts(reply["result"]);
    REQUIRE_MESSAGE(tail.size() >= 3, reply.dump());
    CHECK(tail.size() <= 5);
    const auto number = [](const std::string& text) {
        return std::stol(text.substr(text.rfind(' ') + 1));
    };
    long last = number(tail.back());

    std::vector<json> streamed;
    const auto deadline = Clock::now() + 5s;
    while (streamed.size() < 5) {
        auto line = follower.read_json(deadline);
        REQUIRE_MESSAGE(line.has_value(), "only " << streamed.size() << " line objects");
        CHECK((*line)["id"] == "f");
        REQUIRE_MESSAGE(line->contains("line"), line->dump());
        streamed.push_back(*line);
    }
    for (const auto& l : streamed) {
        const json& inner = l["line"];
        CHECK(inner["stream"] == "stdout");
        CHECK(inner["at"].is_number());
        const std::string text = inner.value("text", "");
        REQUIRE_MESSAGE(text.rfind("tick ", 0) == 0, l.dump());
        const long n = number(text);
        CHECK_MESSAGE(n == last + 1, "after tick " << last << ": " << text);
        last = n;
    }
    // Other connections are still served while one follows.
    CHECK(pkitd.client().command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket stream: pkitctl events prints events until SIGINT then exits 0") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("running"), 5s, "running");

    BackgroundCtl events({"--socket", pkitd.socket(), "events"}, dir.file("events.out"),
                         dir.file("events.err"));
    // Restart until the subscription has surely seen a start: pkitctl may not be
    // connected at the first restart, and a restart's `exited` comes before its `started`.
    const auto saw_start = [&] {
        const std::string out = read_file(dir.file("events.out"));
        return out.find("started") != std::string::npos && out.find("svc") != std::string::npos;
    };
    wait_for(
        [&] {
            if (saw_start()) {
                return true;
            }
            REQUIRE_MESSAGE(events.running(),
                            "pkitctl events exited: " << read_file(dir.file("events.err")));
            client.request({{"cmd", "restart"}, {"services", {"svc"}}});
            return saw_start();
        },
        10s, "a started event line naming svc",
        [&] { return read_file(dir.file("events.out")) + read_file(dir.file("events.err")); });
    CHECK(events.running());

    events.signal(SIGINT);
    const auto code = events.wait_exit(5s);
    const std::string out = read_file(dir.file("events.out"));
    INFO("stdout:\n" << out << "stderr:\n" << read_file(dir.file("events.err")));
    REQUIRE_MESSAGE(code.has_value(), "pkitctl events still running 5 s after SIGINT");
    CHECK(*code == 0);
    CHECK(out.find("started") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket stream: pkitctl signal USR1 reaches the service") {
    TempDir dir;
    dir.service("svc", sh_command("trap 'touch " + dir.file("got-usr1") + "' USR1; touch " +
                                  dir.file("trapped") + "; while true; do sleep 0.05; done"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_file(dir.file("trapped"), 5s);

    const auto result = ctl(pkitd, {"signal", "svc", "USR1"});
    INFO("stdout:\n" << result.out << "stderr:\n" << result.err);
    CHECK(result.exit_code == 0);
    wait_file(dir.file("got-usr1"), 5s);
    Client client = pkitd.client();
    CHECK(status(client, "svc")["state"] == "running");  // trapped: the run goes on

    const auto unknown = ctl(pkitd, {"signal", "nosuch", "USR1"});
    CHECK_MESSAGE(unknown.exit_code == 1, unknown.all());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("socket stream: pkitctl explain prints text and fails for an unknown service") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("running"), 5s, "running");

    const auto known = ctl(pkitd, {"explain", "svc"});
    INFO("stdout:\n" << known.out << "stderr:\n" << known.err);
    CHECK(known.exit_code == 0);
    CHECK(known.out.find_first_not_of(" \n\t") != std::string::npos);

    const auto unknown = ctl(pkitd, {"explain", "nosuch"});
    CHECK_MESSAGE(unknown.exit_code == 1, unknown.all());
    CHECK(unknown.all().find_first_not_of(" \n\t") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}
