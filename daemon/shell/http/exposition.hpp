#pragma once
// A finished /metrics body, shared read-only by every connection that sends it. Its
// bytes live in a sealed memfd when the kernel gives one: a connection then sends them
// with sendfile(2), which hands the file's pages to the socket instead of copying the
// whole body (1 MB at 1,000 services, 12 MB at 10,000) into it for every scrape; the
// little a connection writes itself it reads through a read-only mapping of the same
// pages, so the body is held once. The render appends its text as it goes, a slice at
// a time, so that writing the file never holds the loop long. Without a memfd (no fd
// left, a kernel without memfd_create) the bytes stay in a string and are written as
// before.

#include <cstddef>
#include <string>
#include <string_view>

namespace pkit::shell::http {

class Exposition {
public:
    // An exposition to be written: append() its bytes in order, then seal().
    Exposition();
    // One written at once.
    explicit Exposition(std::string_view text);
    ~Exposition();
    Exposition(const Exposition&) = delete;
    Exposition& operator=(const Exposition&) = delete;

    void append(std::string_view bytes);
    // After the last append(): no write, grow or shrink can change the file any more,
    // and bytes() reads it.
    void seal();

    std::string_view bytes() const {
        return m_map != nullptr ? std::string_view(m_map, m_size) : std::string_view(m_text);
    }
    std::size_t size() const { return bytes().size(); }
    // The sealed memfd that holds bytes(), or -1 when they are only in memory.
    int fd() const { return m_map != nullptr ? m_fd : -1; }

private:
    // Gives up the file: its bytes so far move into m_text.
    void to_memory();

    std::string m_text;  // when there is no memfd
    int m_fd = -1;
    std::size_t m_size = 0;  // bytes written to the file
    const char* m_map = nullptr;
};

}  // namespace pkit::shell::http
