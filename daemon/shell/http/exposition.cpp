#include "daemon/shell/http/exposition.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "daemon/shell/io/write_all.hpp"

namespace pkit::shell::http {

Exposition::Exposition() : m_fd(::memfd_create("pkit-metrics", MFD_CLOEXEC | MFD_ALLOW_SEALING)) {}

Exposition::Exposition(std::string_view text) : Exposition() {
    append(text);
    seal();
}

Exposition::~Exposition() {
    if (m_map != nullptr) {
        ::munmap(const_cast<char*>(m_map), m_size);
    }
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

void Exposition::append(std::string_view bytes) {
    if (m_fd >= 0 && m_map == nullptr) {
        const std::size_t written = write_all(m_fd, bytes);
        m_size += written;
        if (written == bytes.size()) {
            return;
        }
        to_memory();  // the file is full (ENOSPC, a memory limit): go on in memory
        bytes.remove_prefix(written);
    }
    m_text.append(bytes);
}

void Exposition::seal() {
    if (m_fd < 0 || m_map != nullptr) {
        return;
    }
    if (m_size == 0) {
        ::close(m_fd);  // nothing to send; and an empty file cannot be mapped
        m_fd = -1;
        return;
    }
    constexpr int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    void* map = MAP_FAILED;
    if (::fcntl(m_fd, F_ADD_SEALS, seals) == 0) {
        map = ::mmap(nullptr, m_size, PROT_READ, MAP_SHARED, m_fd, 0);
    }
    if (map == MAP_FAILED) {
        to_memory();
        return;
    }
    m_map = static_cast<const char*>(map);
}

void Exposition::to_memory() {
    std::string text(m_size, '\0');
    std::size_t read = 0;
    while (read < m_size) {
        ssize_t n = ::pread(m_fd, text.data() + read, m_size - read, static_cast<off_t>(read));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        read += static_cast<std::size_t>(n);
    }
    text.resize(read);
    m_text = std::move(text) + m_text;
    ::close(m_fd);
    m_fd = -1;
    m_size = 0;
}

}  // namespace pkit::shell::http
