#pragma once
// The daemon's answers to control requests (SPEC §9): it turns each request into
// Supervisor commands and status objects, keeps the replies that wait for runs to end
// (`stop`, `restart`) or for a condition (`wait`), and feeds the `events` and
// `logs --follow` streams. It knows the daemon only through a DaemonPort.
//
// One file a request family: request_handler.cpp (the dispatch, targets, access),
// request_handler_read.cpp (status, logs, explain), request_handler_command.cpp
// (start, stop, restart, signal), request_handler_reload.cpp (reload, its dry run),
// request_handler_wait.cpp (wait) and request_handler_stream.cpp (events, logs --follow).

#include <uv.h>

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "daemon/core/types.hpp"
#include "daemon/core/wait.hpp"
#include "daemon/shell/control/carried_client.hpp"
#include "daemon/shell/control/control_server.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell {

class RequestHandler final : public ControlHandler {
public:
    // At most this many `events` subscribers at once, and as many `logs --follow` ones
    // (each may hold up to max_backlog_bytes of unwritten output).
    static constexpr std::size_t k_max_subscribers = 64;

    // Opens the control socket at `socket_path`, its access from the Supervisor's
    // pkitd.toml; the message says why it failed.
    static std::expected<std::unique_ptr<RequestHandler>, std::string> open(
        uv_loop_t* loop, const std::string& socket_path, DaemonPort& daemon);
    // The same on the listening socket a previous pkitd handed over in `fd` (SPEC §16).
    static std::expected<std::unique_ptr<RequestHandler>, std::string> adopt(
        uv_loop_t* loop, const std::string& socket_path, DaemonPort& daemon, int fd);
    int listener_fd() const;
    ~RequestHandler() override;

    void on_request(ConnectionId connection, proto::Request request) override;
    void on_disconnect(ConnectionId connection) override;

    // Called after every pump: answers `stop`/`restart` requests whose runs have ended,
    // and `wait` requests that are decided (reached, unreachable, or past `within`).
    void after_pump();
    void publish(const core::Event& event);
    void publish_line(std::size_t service, std::uint64_t run, core::Stream stream,
                      std::string_view text, double wall);
    // After a reload: pkitd.toml's control_users and control_group apply again (to the
    // connections accepted from now on) with the socket's mode and group.
    void apply_access();
    // Whether a request kept across turns (a stop or restart waiting for runs, a
    // `wait`, a `logs --follow`) names service slot `service`: a reload may not give
    // that slot to another service meanwhile.
    bool refers_to(std::size_t service) const;

    // Upgrade in place (SPEC §16; request_handler_carry.cpp). Every client connection
    // but the streaming ones, with the request each awaits and what that waits for (a
    // wait's deadline relative to `at`, the hand-over's moment), for the next pkitd.
    // Changes nothing.
    std::vector<CarriedClient> carry(core::TimePoint at) const;
    // In the next pkitd, before its first pump: takes the carried clients over. Each
    // request in flight waits on as it did (`saved`: the hand-over's moment), is handled
    // afresh when it only read, and the upgrade's own is answered with `upgrade_result`.
    // With `from_scratch` (the state could not be resumed: every service started
    // afresh), the commands and waits in flight are answered with upgrade_failed instead.
    void adopt_clients(std::vector<CarriedClient> clients, core::TimePoint saved,
                       const proto::json& upgrade_result, bool from_scratch);

private:
    explicit RequestHandler(DaemonPort& daemon) : m_daemon(daemon) {}

    // Resolves `request.services` (or all), each service once, in order of first
    // mention; replies unknown_service and returns nullopt when a name is unknown.
    std::optional<std::vector<std::size_t>> targets(ConnectionId connection,
                                                    const proto::Request& request);
    // The index of `request.service`; replies unknown_service and returns nullopt when
    // there is none.
    std::optional<std::size_t> target(ConnectionId connection, const proto::Request& request);
    void reply_ok(ConnectionId connection, const proto::json& id, const proto::json& result);
    void reply_error(ConnectionId connection, const proto::json& id, proto::ErrorCode code,
                     const std::string& message);
    proto::json services_json(const std::vector<std::size_t>& services);
    // The status objects of `services`, as of now.
    std::vector<proto::ServiceStatus> statuses(const std::vector<std::size_t>& services) const;
    // The status object of service `i` at `now`, without resources (status adds them).
    proto::ServiceStatus status_row(std::size_t i, core::Now now) const;

    // request_handler_read.cpp
    void handle_status(ConnectionId connection, const proto::Request& request);
    // The status reply with the rows as they are now, and, with `reading`, each run's
    // resources from it (a run started since its pass shows none).
    void reply_status(ConnectionId connection, const proto::Request& request,
                      const DaemonPort::ResourcesReading* reading);
    void handle_logs(ConnectionId connection, const proto::Request& request);
    void handle_explain(ConnectionId connection, const proto::Request& request);
    // `rotate` (SPEC §18): each named service's log file (every one's without names).
    void handle_rotate(ConnectionId connection, const proto::Request& request);
    // The most lines `logs` reads back from a log file beyond the tail (SPEC §18).
    static constexpr std::size_t k_read_back_lines = 10000;
    // request_handler_command.cpp
    void handle_control(ConnectionId connection, const proto::Request& request);
    void handle_signal(ConnectionId connection, const proto::Request& request);
    // request_handler_reload.cpp: reload, and reload_preview (SPEC §21).
    void handle_reload(ConnectionId connection, const proto::Request& request);
    void handle_reload_preview(ConnectionId connection, const proto::Request& request);
    void handle_scale(ConnectionId connection, const proto::Request& request);
    // pause and resume (SPEC §15; request_handler_pause.cpp).
    void handle_pause(ConnectionId connection, const proto::Request& request);
    // Answers the pending stop/restart replies whose runs have ended; keeps the others.
    void check_pending();
    // request_handler_stream.cpp: takes `connection` on as a subscriber (`service` as
    // in Follower), or, when k_max_subscribers of that kind already stream, ends it
    // with a too_large reply and returns false. On success the caller sends the reply.
    bool subscribe(ConnectionId connection, const proto::Request& request, std::size_t service);
    // request_handler_wait.cpp: answered at once when decided, else kept in m_waits
    // with a wake-up at its `within`.
    void handle_wait(ConnectionId connection, const proto::Request& request);
    // Answers the pending waits that are decided now; keeps the others.
    void check_waits();
    // A wait's `for`: ready, done or stopped.
    static core::WaitFor wait_for_of(const std::string& name);

    struct Pending {
        ConnectionId connection;
        proto::json id;
        proto::Command cmd;
        std::vector<std::size_t> services;
        std::vector<std::uint64_t> runs;  // each service's run when the request came
        std::optional<std::size_t> roll;  // restart --rolling: the Supervisor's roll
        // reload: its result, answered once the start_first replacements it began (the
        // services, with the runs they replace) are through
        std::shared_ptr<proto::ReloadResult> reload = nullptr;
    };
    struct Follower {
        ConnectionId connection;
        SharedText head;        // the start of each stream line, with the request's id
        SharedText event_head;  // the same for an event line (head itself for `events`)
        std::size_t service;    // logs --follow; k_events for `events`
    };
    static constexpr std::size_t k_events = SIZE_MAX;
    bool pending_done(const Pending& pending) const;
    // The start_first restarts of `pending` whose new run failed, in words; nullopt
    // when none did.
    std::optional<std::string> failed_replacements(const Pending& pending) const;
    // Answers a reload's Pending: its result with each replacement's outcome.
    void reply_reload(const Pending& pending);
    struct Wait {
        ConnectionId connection;
        proto::json id;
        std::vector<std::size_t> services;
        core::WaitFor condition;
        core::TimePoint deadline;
        double within;                        // as requested, for the message
        std::vector<std::uint64_t> episodes;  // per service: its episodes ended at the start
    };
    // True (and replied) when `wait` is decided at `now`.
    bool answer_wait(const Wait& wait, core::TimePoint now);

    // request_handler_carry.cpp: one carried request in flight, re-registered on the
    // adopted connection `connection` (or answered, see adopt_clients).
    void adopt_request(ConnectionId connection, const std::string& line, CarriedClient& client,
                       core::TimePoint saved, const proto::json& upgrade_result, bool from_scratch);

    DaemonPort& m_daemon;
    std::unique_ptr<ControlServer> m_server;
    // The connection whose `upgrade` is being handled: its reply comes from the next
    // pkitd when the exec succeeds.
    std::optional<ConnectionId> m_upgrading;
    std::vector<Pending> m_pending;
    std::vector<Follower> m_followers;
    std::vector<Wait> m_waits;
    // Held by the replies that wait for a resources pass: gone with the handler.
    std::shared_ptr<bool> m_alive = std::make_shared<bool>(true);
};

}  // namespace pkit::shell
