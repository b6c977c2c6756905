#include "daemon/shell/upgrade/hand_over.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "daemon/shell/upgrade/upgrader.hpp"
#include "proto/version.hpp"

namespace pkit::shell::upgrade {

DaemonFacts collect_facts(const HandOverRooms& rooms, core::TimePoint at, int control_fd,
                          int http_fd, std::vector<int>& kept) {
    DaemonFacts facts;
    auto keep = [&](KeptFd fd) {
        if (fd.fd >= 0) {
            kept.push_back(fd.fd);
            facts.fds.push_back(std::move(fd));
        }
    };
    keep({"control", control_fd, "", 0, "", ""});
    keep({"http", http_fd, "", 0, "", ""});
    keep({"records", rooms.records.fd(), "", 0, "", ""});
    for (const auto& [key, fd] : rooms.listen.kept()) {
        keep({"listen", fd, "", 0, "", key});  // [[listen]]: the key in `path`
    }
    const core::Supervisor& sup = rooms.supervisor;
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (!sup.retired(i)) {
            rooms.notify.hand_over(i, facts, kept);
            rooms.output.hand_over(i, facts, kept);
        }
    }
    facts.scaled = rooms.reloader.scaled_facts();
    rooms.cgroups.hand_over(facts);
    rooms.leftovers.hand_over(facts, at);
    return facts;
}

Takeover resume_owners(const HandOverRooms& rooms, DaemonFacts& facts, core::Now at,
                       const std::string& records_path,
                       const std::function<void(const KeptFd&)>& endpoint,
                       const std::function<void(const std::string&)>& log) {
    core::Supervisor& sup = rooms.supervisor;
    const core::TimePoint saved = facts.saved_at(at.mono);
    rooms.reloader.resume(facts);
    rooms.leftovers.resume(facts, saved);
    rooms.cgroups.resume(facts);
    for (const KeptFd& kept : facts.fds) {
        set_cloexec(kept.fd, true);
        std::optional<std::size_t> service;
        if (!kept.service.empty() && !(service = sup.find(kept.service))) {
            ::close(kept.fd);
        } else if (kept.role == "control" || kept.role == "http") {
            endpoint(kept);
        } else if (kept.role == "records") {
            rooms.records.adopt(kept.fd, records_path);
        } else if (kept.role == "listen") {
            rooms.listen.adopt(kept.path, kept.fd);
        } else if (kept.role == "notify" && service) {
            rooms.notify.adopt(*service, kept);
        } else if ((kept.role == "stdout" || kept.role == "stderr") && service) {
            rooms.output.adopt(*service, kept);
        } else {
            ::close(kept.fd);
        }
    }
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (!sup.retired(i) && sup.service(i).pid() != 0) {
            rooms.records.started(i, sup.service(i).pid());
        }
    }
    sup.resumed(at);
    // A run whose process is no child of ours any more (it cannot be: pkitd kept its
    // pid) ends as a run whose exit was not seen.
    std::vector<pid_t> lost;
    for (std::size_t i = 0; i < sup.size(); ++i) {
        pid_t pid = sup.retired(i) ? 0 : sup.service(i).pid();
        siginfo_t info{};
        if (pid != 0 &&
            ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 &&
            errno == ECHILD) {
            lost.push_back(pid);
        }
    }
    for (pid_t pid : lost) {
        log("pid " + std::to_string(pid) + " named by the handed-over state is no child of pkitd");
        sup.on_exit(pid, core::ProcessExit{}, at);
    }
    // The clients are taken over once this pkitd serves; until then no service inherits
    // their descriptors.
    for (const CarriedClient& client : facts.clients) {
        set_cloexec(client.connection.fd, true);
    }
    return Takeover{std::move(facts.clients), saved, facts.from_version};
}

proto::json takeover_result(const Takeover& takeover, const core::Supervisor& supervisor) {
    std::size_t restarted = 0;
    for (std::size_t i = 0; takeover.from_scratch && i < supervisor.size(); ++i) {
        restarted += supervisor.retired(i) ? 0 : 1;
    }
    return proto::json{{"from", takeover.from_version},
                       {"to", std::string(proto::version())},
                       {"pid", static_cast<int>(::getpid())},
                       {"restarted_services", restarted}};
}

}  // namespace pkit::shell::upgrade
