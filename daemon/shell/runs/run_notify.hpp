#pragma once
// The owner of the runs' sd_notify sockets (SPEC §6 ready.notify): one per current run
// that wants one, next to the control socket (<dir>/notify/NAME.RUN.sock), closed when
// the run ends or its launch fails. A message goes to Message (the Daemon hands it to
// the core). An upgrade in place hands the sockets over.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/supervisor.hpp"
#include "daemon/shell/child_exit.hpp"
#include "daemon/shell/io/notify_socket.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell {

class RunNotify final : public ExitOwner {
public:
    using Message =
        std::function<void(std::size_t service, std::uint64_t run, const NotifyMessage& message)>;
    using Log = std::function<void(std::string_view level, const std::string& message)>;

    // The sockets go in the directory of `control_socket`, under notify/.
    RunNotify(uv_loop_t* loop, const core::Supervisor& supervisor, std::string control_socket,
              Message message, Log log);
    RunNotify(const RunNotify&) = delete;
    RunNotify& operator=(const RunNotify&) = delete;

    // Opens the socket of `run` of `service` when its spec wants one (closing the last
    // run's); the NOTIFY_SOCKET to pass, or nullopt (none wanted, or it could not be
    // opened: logged).
    std::optional<std::string> open(std::size_t service, std::uint64_t run);
    // The run was cloned as `pid`: only its process group may send.
    void cloned(std::size_t service, pid_t pid);
    // The run's launch failed, or it ended: its socket goes.
    void close(std::size_t service);
    // A current run's exit closes its socket (not a replaced run's: the socket is its
    // successor's). Never claims the exit.
    bool on_child_exit(ChildExit& exit) override;
    bool holds(std::size_t service) const;
    void clear() { m_sockets.clear(); }

    // An upgrade in place: `service`'s socket, and the next pkitd's side.
    void hand_over(std::size_t service, upgrade::DaemonFacts& facts, std::vector<int>& kept) const;
    void adopt(std::size_t service, const upgrade::KeptFd& kept);

private:
    std::unique_ptr<NotifySocket>& slot(std::size_t service);

    uv_loop_t* m_loop;
    const core::Supervisor& m_supervisor;
    std::string m_dir;
    Message m_message;
    Log m_log;
    // The current run's socket, per service (null for most).
    std::vector<std::unique_ptr<NotifySocket>> m_sockets;
};

}  // namespace pkit::shell
