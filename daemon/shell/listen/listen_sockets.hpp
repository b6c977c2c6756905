#pragma once
// The [[listen]] sockets pkitd holds for its services (SPEC §14), bound when the
// configuration is loaded, as pkitd's own user, and kept open between runs so that a
// client connecting while a service restarts waits in the backlog.
//
// A socket is known by its kind and address: an entry that keeps them keeps its socket
// (the same inode) across reloads, whatever else of it changes (backlog, Unix mode
// and owner are applied to the open socket). A reload binds what is new before
// anything is closed (stage), and closes what is gone once the new tree is applied
// (commit); a failed bind leaves everything as it was.
//
// Every fd here is close-on-exec: runs get their own copies at 3, 4, ... through the
// launcher (launch_listen.hpp), and nothing else pkitd starts sees them.

#include <sys/types.h>

#include <expected>
#include <map>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "config/model.hpp"
#include "daemon/shell/launch/launch_listen.hpp"

namespace pkit::shell {

class ListenSockets {
public:
    ListenSockets() = default;
    ~ListenSockets();
    ListenSockets(const ListenSockets&) = delete;
    ListenSockets& operator=(const ListenSockets&) = delete;

    // The sockets of one tree, bound but not yet in use (see stage()). Closes what it
    // bound unless committed.
    class Staged {
    public:
        Staged() = default;
        ~Staged();
        Staged(Staged&& other) noexcept;
        Staged& operator=(Staged&& other) noexcept;
        Staged(const Staged&) = delete;
        Staged& operator=(const Staged&) = delete;

    private:
        friend class ListenSockets;
        struct Socket {
            int fd = -1;
            bool fresh = false;  // bound by this stage (closed if not committed)
            config::ListenSpec spec;
            std::string file;    // the service file that declares it
            ino_t file_ino = 0;  // a Unix socket's file, as bound (removed with it)
        };
        void close_fresh();
        std::map<std::string, Socket> m_sockets;  // by key (kind and address)
    };

    // Binds every socket `services` declare that is not open yet and applies changed
    // attributes to the kept ones; nothing is closed. Every entry that cannot be bound
    // is a positioned diagnostic (FILE:LINE:COLUMN at its entry), and then nothing
    // bound here stays open. Instances of one file share its sockets.
    std::expected<Staged, std::vector<config::Diagnostic>> stage(
        const std::vector<const config::ServiceSpec*>& services);

    // Makes `staged` the sockets in use; closes (and for Unix sockets, unlinks) every
    // one it no longer has.
    void commit(Staged staged);

    // The sockets of `spec`'s entries, in file order, with their LISTEN_FDNAMES names;
    // an entry not bound (none should be) is left out.
    std::vector<ListenFd> fds_of(const config::ServiceSpec& spec) const;

    // An upgrade in place (SPEC §16) hands the open sockets to the next pkitd: each
    // with its key (kind and address), for adopt() there. The next stage() keeps them
    // as it keeps any socket whose entry is unchanged.
    std::vector<std::pair<std::string, int>> kept() const;
    // Takes over a socket kept() listed (its fd close-on-exec again); a key that names
    // no socket kind closes it.
    void adopt(const std::string& key, int fd);

private:
    Staged m_current;
};

}  // namespace pkit::shell
