// The RequestHandler against a fake DaemonPort (control/daemon_port.hpp): what a
// client's command becomes is a call on the port's RunCommands, never an act of its own
// on a process, and a read takes the port's Supervisor as it is.

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/shell/control/request_handler.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/control/test_control_server_support.hpp"

namespace pkit::shell::test {

namespace {

struct SignalCall {
    std::size_t service;
    int signo;
    bool group;
};

// A daemon with one service, `web`, running as pid 4242 (a pid nobody may signal:
// the fake process layer records instead).
class FakePort final : public DaemonPort, public DaemonPort::RunCommands {
public:
    FakePort() : m_sup(core::test::supervisor({core::test::spec("web")})) {
        m_sup.start(core::test::at(0));
        m_sup.on_spawned(0, 1, 4242, core::test::at(0.1));
        m_sup.take_actions();
    }
    // DaemonPort
    const core::Supervisor& supervisor() const override { return m_sup; }
    core::Now now() const override { return core::test::at(1); }
    proto::DaemonStatus daemon_status() const override { return {}; }
    void read_resources(ResourcesDone) override {}
    std::optional<proto::ResourceLimitsInfo> resource_limits(std::size_t) const override {
        return std::nullopt;
    }
    void command(const std::function<void(DaemonPort::RunCommands&)>& act) override {
        ++commands;
        act(*this);
        m_sup.take_actions();  // the pump
    }
    void wake_at(core::TimePoint) override {}
    void reload(ReloadDone) override {}
    void preview_reload(PreviewDone) override {}
    void request_shutdown(const std::string&) override {}
    std::optional<std::string> scale(const std::string&, int) override { return std::nullopt; }
    void upgrade(std::string, UpgradeDone) override {}
    void log(std::string_view, const std::string&) override {}
    // RunCommands
    void start(std::size_t service) override { m_sup.start_service(service, now()); }
    void stop(std::size_t service) override {
        stopped.push_back(service);
        m_sup.stop_service(service, now());
    }
    void restart(std::size_t service) override { m_sup.restart_service(service, now()); }
    std::size_t restart_rolling(std::vector<std::size_t> services) override {
        return m_sup.restart_rolling(std::move(services), now());
    }
    void pause(std::size_t) override {}
    void resume(std::size_t) override {}
    void signal(std::size_t service, int signo, bool group) override {
        signals.push_back({service, signo, group});
    }

    int commands = 0;
    std::vector<SignalCall> signals;
    std::vector<std::size_t> stopped;

private:
    core::Supervisor m_sup;
};

struct HandlerFixture {
    TestLoop loop;
    TempDir dir;
    FakePort port;
    std::string path = dir.path() + "/pkitd.sock";
    std::unique_ptr<RequestHandler> handler;

    HandlerFixture() {
        auto opened = RequestHandler::open(loop.get(), path, port);
        REQUIRE_MESSAGE(opened.has_value(), (opened ? "" : opened.error()));
        handler = std::move(*opened);
    }
    ~HandlerFixture() {
        handler.reset();
        loop.close();
    }
    proto::json ask(RawClient& client, const std::string& line) {
        REQUIRE(client.write(line + "\n"));
        auto reply = client.read_line();
        REQUIRE(reply.has_value());
        return parse_line(*reply);
    }
};

}  // namespace

TEST_CASE("`signal` goes to the port's guarded RunCommands::signal, once per service") {
    HandlerFixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.connected());
    proto::json reply =
        f.ask(client, R"({"id":1,"cmd":"signal","services":["web"],"signal":"HUP","group":true})");
    CHECK(reply["ok"] == true);
    CHECK(f.port.commands == 1);
    REQUIRE(f.port.signals.size() == 1);
    CHECK(f.port.signals[0].service == 0);
    CHECK(f.port.signals[0].signo == SIGHUP);
    CHECK(f.port.signals[0].group);
}

TEST_CASE("an unknown signal or service is refused before any command") {
    HandlerFixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.connected());
    proto::json bad_signal =
        f.ask(client, R"({"id":1,"cmd":"signal","services":["web"],"signal":"NOPE"})");
    CHECK(bad_signal["ok"] == false);
    proto::json unknown = f.ask(client, R"({"id":2,"cmd":"stop","services":["nope"]})");
    CHECK(unknown["ok"] == false);
    CHECK(f.port.commands == 0);
    CHECK(f.port.signals.empty());
}

TEST_CASE("`stop --no-block` is one command on the port, answered with the rows") {
    HandlerFixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.connected());
    proto::json reply =
        f.ask(client, R"({"id":3,"cmd":"stop","services":["web"],"no_block":true})");
    CHECK(reply["ok"] == true);
    CHECK(f.port.commands == 1);
    CHECK(f.port.stopped == std::vector<std::size_t>{0});
    CHECK(f.port.supervisor().service(0).state() == core::State::stopping);
}

}  // namespace pkit::shell::test
