#pragma once
// The launcher's part of [[listen]] (SPEC §14): the sockets a run gets, passed as
// sd_listen_fds(3) reads them. The parent prepares everything here; the child only
// places the fds and writes its pid (launch_child.cpp, place_listen_fds).

#include <expected>
#include <string>
#include <vector>

namespace pkit::shell {

struct PreparedLaunch;
struct LaunchFailure;

// One socket for a run: pkitd's fd (close-on-exec) and its LISTEN_FDNAMES name.
struct ListenFd {
    int fd = -1;
    std::string name;
};

// Sets LISTEN_FDS and LISTEN_FDNAMES in `env` ("NAME=value" entries) and reserves
// LISTEN_PID's value for the child to fill; without sockets, removes them, so a run
// never sees values pkitd inherited from whatever started it.
void add_listen_env(std::vector<std::string>& env, const std::vector<ListenFd>& listen);

// Gives the launch its own copies of the sockets (close-on-exec, closed by the
// PreparedLaunch), so that a reload closing a socket before the clone cannot take it
// from the run, and points the plan at LISTEN_PID's reserved value in its envp. Call
// once the envp is built from an env that went through add_listen_env().
std::expected<void, LaunchFailure> plan_listen(PreparedLaunch& prepared,
                                               const std::vector<ListenFd>& listen);

}  // namespace pkit::shell
