// Reading grids and public members out of a header's text (grid_reader.hpp).

#include "tests/unit/core/grid_reader.hpp"

#include <cctype>
#include <sstream>

namespace pkit::core::test::grid {

namespace {

std::vector<std::string> words_of_line(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) {
        words.push_back(w);
    }
    return words;
}

bool is_identifier_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string trimmed(std::string_view text) {
    std::size_t begin = 0;
    std::size_t end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])) != 0) {
        ++begin;
    }
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) {
        --end;
    }
    return std::string(text.substr(begin, end - begin));
}

// The class's body (between its braces) with comments blanked out; empty if absent.
std::string class_body(std::string_view text, std::string_view class_name) {
    const std::string opening = "class " + std::string(class_name) + " {";
    const std::size_t at = text.find(opening);
    if (at == std::string_view::npos) {
        return {};
    }
    std::string body;
    int depth = 1;
    for (std::size_t i = at + opening.size(); i < text.size(); ++i) {
        if (text.compare(i, 2, "//") == 0) {
            while (i < text.size() && text[i] != '\n') {
                ++i;
            }
            body += '\n';
            continue;
        }
        if (text[i] == '{') {
            ++depth;
        } else if (text[i] == '}' && --depth == 0) {
            return body;
        }
        body += text[i];
    }
    return {};
}

// Splits a class body into its own declarations: a function's body and a nested
// type's braces end the declaration before them and are dropped.
std::vector<std::string> declarations(const std::string& body) {
    std::vector<std::string> found;
    std::string current;
    int depth = 0;
    int parens = 0;
    for (char c : body) {
        if (depth > 0) {
            depth += c == '{' ? 1 : c == '}' ? -1 : 0;
            continue;
        }
        if (c == '(') {
            ++parens;
        } else if (c == ')') {
            --parens;
        }
        if ((c == '{' && parens == 0) || c == ';') {
            found.push_back(current);
            current.clear();
            depth = c == '{' ? 1 : 0;
            continue;
        }
        current += c;
    }
    found.push_back(current);
    return found;
}

}  // namespace

std::vector<Grid> read_grids(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::vector<Grid> grids;
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        const std::vector<std::string> cells = words_of_line(line);
        if (!inside) {
            if (cells.size() > 4 && cells[0] == "//" && cells[1] == "input" && cells[2] == "\\") {
                grids.push_back(Grid{cells[3], {cells.begin() + 4, cells.end()}, {}});
                inside = true;
            }
            continue;
        }
        if (cells.size() < 2 || cells[0] != "//") {
            inside = false;
            continue;
        }
        grids.back().rows.emplace_back(cells[1],
                                       std::vector<std::string>(cells.begin() + 2, cells.end()));
    }
    return grids;
}

std::vector<Member> public_members(std::string_view text, std::string_view class_name) {
    std::vector<Member> members;
    bool in_public = false;  // a class starts private
    for (const std::string& declaration : declarations(class_body(text, class_name))) {
        std::string rest = trimmed(declaration);
        // Access labels open the text of the declaration after them.
        for (bool more = true; more;) {
            more = false;
            for (std::string_view label : {"public", "private", "protected"}) {
                if (rest.starts_with(label)) {
                    std::string after = trimmed(std::string_view(rest).substr(label.size()));
                    if (after.starts_with(':') && !after.starts_with("::")) {
                        in_public = label == "public";
                        rest = trimmed(std::string_view(after).substr(1));
                        more = true;
                    }
                }
            }
        }
        const std::size_t open = rest.find('(');
        if (!in_public || open == std::string::npos ||
            rest.substr(0, open).find('=') != std::string::npos) {
            continue;  // not a function: a type, a using or a data member
        }
        std::size_t end = open;
        while (end > 0 && std::isspace(static_cast<unsigned char>(rest[end - 1])) != 0) {
            --end;
        }
        std::size_t begin = end;
        while (begin > 0 && (is_identifier_char(rest[begin - 1]) || rest[begin - 1] == '~')) {
            --begin;
        }
        const std::string name = rest.substr(begin, end - begin);
        if (name.empty() || name == class_name || name == "~" + std::string(class_name)) {
            continue;
        }
        int parens = 0;
        std::size_t close = open;
        for (; close < rest.size(); ++close) {
            parens += rest[close] == '(' ? 1 : rest[close] == ')' ? -1 : 0;
            if (parens == 0) {
                break;
            }
        }
        if (close == rest.size()) {
            continue;  // unbalanced: not a declaration this reader understands
        }
        const std::string after = trimmed(std::string_view(rest).substr(close + 1));
        const bool is_const =
            after.starts_with("const") && (after.size() == 5 || !is_identifier_char(after[5]));
        members.push_back(Member{name, is_const});
    }
    return members;
}

}  // namespace pkit::core::test::grid
