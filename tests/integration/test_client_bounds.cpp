// What one client can cost pkitd: a streaming client that never reads is cut
// off once its queue holds 1 MiB, and its memory goes back; at most 64 `events`
// subscribers and 64 `logs --follow` followers at once; a service named twice in a
// request is acted on once, with one reply row.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A streaming client that sends its request and never reads a byte, with a small
// receive buffer, so that what pkitd sends it piles up in pkitd.
class Stalled {
public:
    Stalled(const std::string& socket_path, const json& request) {
        m_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(m_fd >= 0);
        int size = 4096;
        ::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
        REQUIRE_MESSAGE(::connect(m_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0,
                        std::strerror(errno));
        std::string line = request.dump() + "\n";
        REQUIRE(::write(m_fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
    }
    ~Stalled() { ::close(m_fd); }
    Stalled(const Stalled&) = delete;
    Stalled& operator=(const Stalled&) = delete;

    // pkitd has closed its end; seen without reading anything (POLLRDHUP).
    bool cut_off() const {
        pollfd p{m_fd, POLLRDHUP, 0};
        return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP)) != 0;
    }

private:
    int m_fd = -1;
};

// Services that keep pkitd's streams busy: one that crashes at once, over and over, four
// whose command is a missing program with a 3 KB path (each launch failure is an
// `exited` event of that size, and costs no fork: many event bytes for little work),
// and one that prints lines without end (many log lines).
void loud_services(const TempDir& dir) {
    const std::string quiet = "[output]\nforward = \"none\"\n";
    const std::string loop = restart_table("always", "1ms", 1.0);
    dir.service("crash", sh_command("echo starting up; echo giving up >&2; exit 1") + quiet + loop);
    std::string missing = "/nonexistent";
    for (int k = 0; k < 15; ++k) {
        missing += "/" + std::string(200, 'd');
    }
    for (const char* name : {"gone1", "gone2", "gone3", "gone4"}) {
        dir.service(name, "command = [" + toml_str(missing + "/" + name) + "]\n" + quiet + loop);
    }
    dir.service("flood", sh_command("while :; do seq -f 'flood line %g, padded to look like a "
                                    "real log line' 1 500; sleep 0.1; done") +
                             quiet);
}

std::size_t cut_off_count(const std::vector<std::unique_ptr<Stalled>>& clients) {
    return static_cast<std::size_t>(
        std::ranges::count_if(clients, [](const auto& c) { return c->cut_off(); }));
}

// `count` stalled subscribers: the first half to `events`, the rest following flood.
std::vector<std::unique_ptr<Stalled>> stall(const Daemon& pkitd, int count) {
    std::vector<std::unique_ptr<Stalled>> clients;
    for (int k = 0; k < count; ++k) {
        json request = k < count / 2 ? json{{"id", k}, {"cmd", "events"}}
                                     : json{{"id", k},
                                            {"cmd", "logs"},
                                            {"service", "flood"},
                                            {"lines", 0},
                                            {"follow", true}};
        clients.push_back(std::make_unique<Stalled>(pkitd.socket(), request));
    }
    return clients;
}

long rss_of(const Daemon& pkitd) {
    auto rss = rss_kb(pkitd.pid());
    REQUIRE_MESSAGE(rss.has_value(), "pkitd is gone");
    return *rss;
}

json one_row(const json& reply, const std::string& what) {
    REQUIRE_MESSAGE(reply["ok"] == true, what << ": " << reply.dump());
    const json& services = reply["result"]["services"];
    REQUIRE_MESSAGE(services.size() == 1, what << ": " << reply.dump());
    CHECK(services[0]["name"] == "dup");
    return services[0];
}

json request_twice(Client& client, const std::string& cmd, json extra = json::object()) {
    extra["cmd"] = cmd;
    extra["services"] = {"dup", "dup"};
    return client.request(extra, 15s);
}

// Subscribes on a fresh connection; returns the reply.
json subscribe(Client& client, bool events) {
    json request = events ? json{{"cmd", "events"}}
                          : json{{"cmd", "logs"}, {"service", "svc"}, {"follow", true}};
    return client.request(request, 5s);
}

void check_refused(Client& client, bool events) {
    json reply = subscribe(client, events);
    REQUIRE_MESSAGE(reply["ok"] == false, reply.dump());
    CHECK(reply["error"]["code"] == "too_large");
    std::string message = reply["error"]["message"];
    CHECK_MESSAGE(message.find(events ? "too many events subscribers"
                                      : "too many logs --follow subscribers") != std::string::npos,
                  message);
    CHECK_MESSAGE(message.find("64") != std::string::npos, message);
    // Then the connection ends.
    auto deadline = Clock::now() + 5s;
    while (client.read_line(deadline)) {
    }
    CHECK(client.eof());
}

}  // namespace

TEST_CASE("client bounds: stalled subscribers beside a crash loop are cut off, pkitd stays small") {
    TempDir dir;
    loud_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "flood", state_is("running"), 10s, "flood runs");

    // The most pkitd allows: 64 events subscribers and 64 followers, none reading.
    auto clients = stall(pkitd, 128);
    long peak = 0;
    int pings = 0;
    wait_for(
        [&] {
            peak = std::max(peak, rss_of(pkitd));
            json pong = client.command("ping", 10s);
            REQUIRE_MESSAGE(pong["ok"] == true, pong.dump());
            ++pings;
            return cut_off_count(clients) == clients.size();
        },
        120s, "every stalled subscriber to be cut off",
        [&] {
            return std::to_string(cut_off_count(clients)) + " of 128 cut off, RSS peak " +
                   std::to_string(peak) + " kB";
        });
    MESSAGE("pkitd's RSS peaked at ", peak, " kB over ", pings, " pings");
    // Each queue is bounded at 1 MiB of counted memory, and one event's (or line's) text
    // is held once for all its subscribers: far below 128 full queues.
    CHECK(peak < 200 * 1024);
    json pong = client.command("ping", 5s);
    CHECK(pong["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("client bounds: memory goes back after 100 stalled streaming clients leave") {
    TempDir dir;
    loud_services(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "flood", state_is("running"), 10s, "flood runs");
    wait_status(client, "crash", run_at_least(5), 20s, "crash loops");
    const long start = rss_of(pkitd);

    {
        auto clients = stall(pkitd, 100);
        long peak = 0;
        // Their queues fill up (pkitd cuts each off at 1 MiB), then they all leave.
        wait_for(
            [&] {
                peak = std::max(peak, rss_of(pkitd));
                return cut_off_count(clients) == clients.size();
            },
            120s, "every stalled client to be cut off",
            [&] { return std::to_string(cut_off_count(clients)) + " of 100 cut off"; });
        MESSAGE("RSS: ", start, " kB at the start, peak ", peak, " kB");
    }
    const long limit = 2 * start + 16 * 1024;
    long now = 0;
    wait_for(
        [&] {
            now = rss_of(pkitd);
            return now < limit;
        },
        20s, "pkitd's RSS to come back under " + std::to_string(limit) + " kB",
        [&] { return std::to_string(now) + " kB"; });
    MESSAGE("RSS after they left: ", now, " kB");
    CHECK(client.command("ping", 5s)["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("client bounds: the 65th events subscriber and logs follower are refused, then let in") {
    TempDir dir;
    dir.service("svc", sh_command("echo hello; exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client control = pkitd.client();
    wait_status(control, "svc", state_is("running"), 10s, "svc runs");

    std::vector<std::unique_ptr<Client>> subscribers;
    std::vector<std::unique_ptr<Client>> followers;
    for (int k = 0; k < 64; ++k) {
        subscribers.push_back(std::make_unique<Client>(pkitd.socket()));
        json reply = subscribe(*subscribers.back(), true);
        REQUIRE_MESSAGE(reply["ok"] == true, k << ": " << reply.dump());
    }
    // The two kinds are counted apart: 64 subscribers leave room for 64 followers.
    for (int k = 0; k < 64; ++k) {
        followers.push_back(std::make_unique<Client>(pkitd.socket()));
        json reply = subscribe(*followers.back(), false);
        REQUIRE_MESSAGE(reply["ok"] == true, k << ": " << reply.dump());
    }
    {
        Client extra = pkitd.client();
        check_refused(extra, true);
    }
    {
        Client extra = pkitd.client();
        check_refused(extra, false);
    }
    auto events = ctl(pkitd, {"events"});
    CHECK(events.exit_code == 1);
    CHECK_MESSAGE(events.err.find("too_large: too many events subscribers") != std::string::npos,
                  events.all());
    auto logs = ctl(pkitd, {"logs", "-f", "svc"});
    CHECK(logs.exit_code == 1);
    CHECK_MESSAGE(logs.err.find("too many logs --follow subscribers") != std::string::npos,
                  logs.all());
    // Other requests are served as usual.
    CHECK(control.command("ping", 5s)["ok"] == true);

    // One of each leaves: a new one is let in (once pkitd has seen the first go).
    subscribers.pop_back();
    followers.pop_back();
    for (bool kind : {true, false}) {
        json last;
        wait_for(
            [&] {
                Client next = pkitd.client();
                last = subscribe(next, kind);
                if (last["ok"] == true) {
                    (kind ? subscribers : followers)
                        .push_back(std::make_unique<Client>(std::move(next)));
                    return true;
                }
                return false;
            },
            10s, std::string("a new ") + (kind ? "subscriber" : "follower") + " to be let in",
            [&] { return last.dump(); });
    }
    {
        Client extra = pkitd.client();
        check_refused(extra, true);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("client bounds: a service named twice is acted on once and gets one row") {
    TempDir dir;
    dir.service("dup", "command = [\"sleep\", \"1000\"]\n");
    dir.service("other", "command = [\"sleep\", \"1000\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "dup", state_is("running"), 10s, "dup runs");
    const int run = before["run"];

    one_row(request_twice(client, "status"), "status dup dup");
    one_row(request_twice(client, "signal", {{"signal", "CONT"}}), "signal dup dup");
    json restarted = one_row(request_twice(client, "restart"), "restart dup dup");
    CHECK(restarted["run"] == run + 1);
    json stopped = one_row(request_twice(client, "stop"), "stop dup dup");
    CHECK(stopped["state"] == "stopped");
    json started = one_row(request_twice(client, "start"), "start dup dup");
    CHECK(started["run"] == run + 2);
    wait_status(client, "dup", state_is("running"), 10s, "dup runs again");

    // Several names, some twice: one row each, in the order first named.
    json mixed = client.request({{"cmd", "restart"}, {"services", {"other", "dup", "other"}}}, 15s);
    REQUIRE_MESSAGE(mixed["ok"] == true, mixed.dump());
    REQUIRE(mixed["result"]["services"].size() == 2);
    CHECK(mixed["result"]["services"][0]["name"] == "other");
    CHECK(mixed["result"]["services"][1]["name"] == "dup");
    CHECK(mixed["result"]["services"][1]["run"] == run + 3);

    // The same through pkitctl.
    for (const char* cmd : {"restart", "stop", "start", "status"}) {
        auto result = ctl(pkitd, {"--json", cmd, "dup", "dup"});
        REQUIRE_MESSAGE(result.exit_code == 0, cmd << ": " << result.all());
        json parsed = json::parse(result.out);
        CHECK_MESSAGE(parsed["services"].size() == 1, cmd << ": " << result.out);
    }
    auto signalled = ctl(pkitd, {"--json", "signal", "dup", "dup", "CONT"});
    REQUIRE_MESSAGE(signalled.exit_code == 0, signalled.all());
    CHECK(json::parse(signalled.out)["services"].size() == 1);
    auto table = ctl(pkitd, {"restart", "dup", "dup"});
    REQUIRE_MESSAGE(table.exit_code == 0, table.all());
    std::size_t rows = 0;
    for (std::size_t at = table.out.find("dup"); at != std::string::npos;
         at = table.out.find("dup", at + 1)) {
        ++rows;
    }
    CHECK_MESSAGE(rows == 1, table.out);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("client bounds: a status naming one service 140000 times gets a one-row reply") {
    TempDir dir;
    dir.service("web", "command = [\"sleep\", \"1000\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    std::string line = R"({"id":1,"cmd":"status","services":[)";
    for (int k = 0; k < 140000; ++k) {
        line += k == 0 ? "\"web\"" : ",\"web\"";
    }
    line += "]}\n";
    client.send_raw(line);
    auto reply = client.read_line(Clock::now() + 10s);
    REQUIRE(reply.has_value());
    CHECK(reply->size() < 16 * 1024);
    json parsed = json::parse(*reply);
    REQUIRE_MESSAGE(parsed["ok"] == true, reply->substr(0, 500));
    CHECK(parsed["result"]["services"].size() == 1);

    // Unknown names are listed only in part.
    std::string unknown = R"({"id":2,"cmd":"status","services":[)";
    for (int k = 0; k < 50000; ++k) {
        unknown += (k == 0 ? "\"nope" : ",\"nope") + std::to_string(k) + "\"";
    }
    unknown += "]}\n";
    client.send_raw(unknown);
    auto refused = client.read_line(Clock::now() + 10s);
    REQUIRE(refused.has_value());
    CHECK(refused->size() < 4096);
    json error = json::parse(*refused);
    CHECK(error["error"]["code"] == "unknown_service");
    CHECK_MESSAGE(
        std::string(error["error"]["message"]).find("and 49992 more") != std::string::npos,
        *refused);
    CHECK(pkitd.stop() == 0);
}
