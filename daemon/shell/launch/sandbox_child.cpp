// The child's side of SPEC §19 (sandbox_child.hpp). Only system calls below: the child
// shares pkitd's memory until execve.

#include "daemon/shell/launch/sandbox_child.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pkit::shell {

namespace {

// The loopback interface of a fresh network namespace is down: brought up, as systemd's
// PrivateNetwork= does, so that the run can still talk to itself.
bool loopback_up() {
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        return false;
    }
    ifreq request{};
    std::memcpy(request.ifr_name, "lo", 3);
    bool ok = ioctl(sock, SIOCGIFFLAGS, &request) == 0;
    if (ok) {
        request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
        ok = ioctl(sock, SIOCSIFFLAGS, &request) == 0;
    }
    int error = errno;
    close(sock);
    errno = error;
    return ok;
}

bool set_readonly(int dirfd, const char* path, unsigned flags) {
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    return mount_setattr(dirfd, path, flags | AT_RECURSIVE, &attr, sizeof attr) == 0;
}

// A detached, read-only tmpfs holding an empty directory "d" and an empty file "f", both
// mode 000: what an inaccessible path is covered with (a directory by "d", anything else
// by "f"). Returns its mount fd, or -1.
int inaccessible_source() {
    int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0) {
        return -1;
    }
    int mnt = -1;
    if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "000", 0) == 0 &&
        fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0) {
        mnt =
            fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    }
    int error = errno;
    close(fs);
    if (mnt < 0) {
        errno = error;
        return -1;
    }
    if (mkdirat(mnt, "d", 0) != 0 || mknodat(mnt, "f", S_IFREG, 0) != 0 ||
        !set_readonly(mnt, "", AT_EMPTY_PATH)) {
        error = errno;
        close(mnt);
        errno = error;
        return -1;
    }
    return mnt;
}

// Mounts a copy of `source`'s entry `name` over `path`.
bool cover(int source, const char* name, const char* path) {
    int copy = open_tree(source, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (copy < 0) {
        return false;
    }
    bool ok = move_mount(copy, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) == 0;
    int error = errno;
    close(copy);
    errno = error;
    return ok;
}

// One step; false with errno on failure. `hidden` is the inaccessible source, made on
// first use.
bool apply_step(const ChildSandbox& sandbox, const MountStep& step, int& hidden) {
    switch (step.op) {
        case MountOp::capture:
            sandbox.fds[step.slot] =
                open_tree(AT_FDCWD, step.path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
            return sandbox.fds[step.slot] >= 0;
        case MountOp::readonly_root:
            return set_readonly(AT_FDCWD, "/", 0);
        case MountOp::readonly:
            return mount(step.path, step.path, nullptr, MS_BIND | MS_REC, nullptr) == 0 &&
                   set_readonly(AT_FDCWD, step.path, 0);
        case MountOp::restore: {
            int fd = sandbox.fds[step.slot];
            if (fd < 0) {
                return true;  // an optional path that was missing
            }
            bool ok = move_mount(fd, "", AT_FDCWD, step.path, MOVE_MOUNT_F_EMPTY_PATH) == 0;
            int error = errno;
            close(fd);
            sandbox.fds[step.slot] = -1;
            errno = error;
            return ok;
        }
        case MountOp::tmpfs:
            return mount("tmpfs", step.path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0;
        case MountOp::inaccessible: {
            struct stat st {};
            if (stat(step.path, &st) != 0) {
                return false;
            }
            if (hidden < 0 && (hidden = inaccessible_source()) < 0) {
                return false;
            }
            return cover(hidden, S_ISDIR(st.st_mode) ? "d" : "f", step.path);
        }
    }
    errno = EINVAL;
    return false;
}

SandboxResult apply_mounts(const ChildSandbox& sandbox) {
    // A namespace of its own whose mounts receive the host's later mounts but never
    // send theirs back.
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
        return sandbox.namespace_label;
    }
    int hidden = -1;
    for (const MountStep& step : sandbox.steps) {
        if (!apply_step(sandbox, step, hidden)) {
            if (step.optional && errno == ENOENT) {
                if (step.op == MountOp::capture) {
                    sandbox.fds[step.slot] = -1;
                }
                continue;
            }
            return step.label;
        }
    }
    if (hidden >= 0) {
        close(hidden);
    }
    if (sandbox.chdir_to != nullptr && chdir(sandbox.chdir_to) != 0) {
        return sandbox.chdir_label;
    }
    return k_sandbox_ok;
}

// Drops every capability outside the kept set from the bounding set, up to the last the
// kernel knows (PR_CAPBSET_DROP says EINVAL past it).
bool drop_bounding(std::uint64_t keep) {
    for (int cap = 0; cap < 64; ++cap) {
        if ((keep >> cap) & 1U) {
            continue;
        }
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL) {
                return true;
            }
            return false;
        }
    }
    return true;
}

// Effective, permitted and inheritable set to `keep` (within what is permitted now).
bool set_capability_sets(std::uint64_t keep) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) {
        return false;
    }
    const std::uint64_t permitted =
        (static_cast<std::uint64_t>(data[1].permitted) << 32) | data[0].permitted;
    const std::uint64_t sets = keep & permitted;
    for (int i = 0; i < 2; ++i) {
        auto word = static_cast<std::uint32_t>(sets >> (32 * i));
        data[i].effective = word;
        data[i].permitted = word;
        data[i].inheritable = word;
    }
    return syscall(SYS_capset, &header, data) == 0;
}

}  // namespace

SandboxResult sandbox_before_credentials(const ChildSandbox& sandbox) {
    if (sandbox.private_network && (unshare(CLONE_NEWNET) != 0 || !loopback_up())) {
        return sandbox.network_label;
    }
    if (sandbox.mount_namespace) {
        if (SandboxResult failed = apply_mounts(sandbox); failed != k_sandbox_ok) {
            return failed;
        }
    }
    if (sandbox.set_capabilities) {
        if (!drop_bounding(sandbox.capabilities)) {
            return sandbox.capabilities_label;
        }
        // Kept through the user change, so that the ambient set can be raised after it.
        if (sandbox.ambient && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) {
            return sandbox.capabilities_label;
        }
    }
    return k_sandbox_ok;
}

SandboxResult sandbox_after_credentials(const ChildSandbox& sandbox) {
    if (sandbox.set_capabilities) {
        if (!set_capability_sets(sandbox.capabilities)) {
            return sandbox.capabilities_label;
        }
        if (sandbox.ambient) {
            for (int cap = 0; cap < 64; ++cap) {
                if (((sandbox.capabilities >> cap) & 1U) != 0 &&
                    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) {
                    return sandbox.capabilities_label;
                }
            }
        }
    }
    if (sandbox.no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return sandbox.no_new_privileges_label;
    }
    return k_sandbox_ok;
}

}  // namespace pkit::shell
