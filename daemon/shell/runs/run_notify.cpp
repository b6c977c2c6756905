#include "daemon/shell/runs/run_notify.hpp"

namespace pkit::shell {

RunNotify::RunNotify(uv_loop_t* loop, const core::Supervisor& supervisor,
                     std::string control_socket, Message message, Log log)
    : m_loop(loop),
      m_supervisor(supervisor),
      // Next to the control socket: a directory pkitd owns, short enough for sun_path.
      m_dir(control_socket.substr(0, control_socket.rfind('/') + 1)),
      m_message(std::move(message)),
      m_log(std::move(log)),
      m_sockets(supervisor.size()) {}

std::unique_ptr<NotifySocket>& RunNotify::slot(std::size_t service) {
    if (service >= m_sockets.size()) {
        m_sockets.resize(std::max(service + 1, m_supervisor.size()));  // a reload added some
    }
    return m_sockets[service];
}

std::optional<std::string> RunNotify::open(std::size_t service, std::uint64_t run) {
    const config::ServiceSpec& spec = m_supervisor.service(service).spec();
    slot(service).reset();
    if (!spec.ready->notify) {
        return std::nullopt;
    }
    std::string path = m_dir + "notify/" + spec.name + "." + std::to_string(run) + ".sock";
    auto socket = NotifySocket::open(
        m_loop, path,
        [this, service, run](const NotifyMessage& message) { m_message(service, run, message); },
        notify_owner(spec));
    if (!socket) {
        m_log("warning", spec.name + ": cannot open its sd_notify socket: " + socket.error());
        return std::nullopt;
    }
    slot(service) = std::move(*socket);
    return path;
}

void RunNotify::cloned(std::size_t service, pid_t pid) {
    if (service < m_sockets.size() && m_sockets[service]) {
        m_sockets[service]->set_run_pgid(pid);
    }
}

void RunNotify::close(std::size_t service) {
    if (service < m_sockets.size()) {
        m_sockets[service].reset();
    }
}

bool RunNotify::on_child_exit(ChildExit& exit) {
    if (exit.service && m_supervisor.service(*exit.service).pid() == exit.pid) {
        close(*exit.service);
    }
    return false;
}

bool RunNotify::holds(std::size_t service) const {
    return service < m_sockets.size() && m_sockets[service] != nullptr;
}

void RunNotify::hand_over(std::size_t service, upgrade::DaemonFacts& facts,
                          std::vector<int>& kept) const {
    if (!holds(service) || m_sockets[service]->fd() < 0) {
        return;
    }
    const core::Service& s = m_supervisor.service(service);
    kept.push_back(m_sockets[service]->fd());
    facts.fds.push_back(
        {"notify", m_sockets[service]->fd(), s.name(), s.run(), "", m_sockets[service]->path()});
}

void RunNotify::adopt(std::size_t service, const upgrade::KeptFd& kept) {
    std::uint64_t run = kept.run;
    auto socket = NotifySocket::adopt(
        m_loop, kept.path,
        [this, service, run](const NotifyMessage& message) { m_message(service, run, message); },
        kept.fd);
    if (socket) {
        (*socket)->set_run_pgid(m_supervisor.service(service).pid());
        slot(service) = std::move(*socket);
    }
}

}  // namespace pkit::shell
