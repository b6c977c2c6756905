#include "daemon/shell/http/exposition.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace pkit::shell::http {

namespace {

// The whole of `text` into `fd`; false on a failure (the memfd is then not used).
bool write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

Exposition::Exposition(std::string text) : m_text(std::move(text)) {
    if (m_text.empty()) {
        return;  // nothing to send; and an empty file cannot be mapped
    }
    int fd = ::memfd_create("pkit-metrics", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return;
    }
    constexpr int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    void* map = MAP_FAILED;
    if (write_all(fd, m_text) && ::fcntl(fd, F_ADD_SEALS, seals) == 0) {
        map = ::mmap(nullptr, m_text.size(), PROT_READ, MAP_SHARED, fd, 0);
    }
    if (map == MAP_FAILED) {
        ::close(fd);
        return;
    }
    m_fd = fd;
    m_map = static_cast<const char*>(map);
    m_size = m_text.size();
    std::string().swap(m_text);  // held once, in the file
}

Exposition::~Exposition() {
    if (m_map != nullptr) {
        ::munmap(const_cast<char*>(m_map), m_size);
    }
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

}  // namespace pkit::shell::http
