--- Reading the house against its map (tools/layout.lua): the rooms of files and modules, the
-- `require`s of a Lua file, the edges the map does not allow, and circles among C includes.
-- Pure functions over text and tables, so spec/layout_spec.lua can feed them made-up edges.
local _M = {}

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

--- The room a file belongs to: the room with the longest matching `files` entry (a folder
-- entry ends in "/"), or nil.
-- @tparam table layout the map (`rooms`)
-- @tparam string path e.g. "lua/jsoncontract/run/init.lua"
-- @treturn table|nil room
function _M.room_of_file(layout, path)
    local best, best_len
    for _, r in ipairs(layout.rooms) do
        for _, f in ipairs(r.files) do
            local hit = (f:sub(-1) == "/" and starts(path, f)) or path == f
            if hit and (not best_len or #f > best_len) then best, best_len = r, #f end
        end
    end
    return best
end

--- The room of a required module name: by the map's `modules`, else by its file under lua/
-- (`a.b` -> lua/a/b.lua or lua/a/b/init.lua). A name ending in "." (a require built at run
-- time, `"jsoncontract.providers." .. name`) is the room of that folder.
-- @tparam table layout
-- @tparam string name
-- @tparam function exists `function(path) -> boolean`
-- @treturn table|nil room
-- @treturn string|nil the file the name was found in
function _M.room_of_module(layout, name, exists)
    for _, r in ipairs(layout.rooms) do
        for _, m in ipairs(r.modules or {}) do
            if m == name then return r end
        end
    end
    local base = "lua/" .. name:gsub("%.", "/")
    if name:sub(-1) == "." then return _M.room_of_file(layout, base), base end
    for _, f in ipairs { base .. ".lua", base .. "/init.lua" } do
        if exists(f) then return _M.room_of_file(layout, f), f end
    end
    return nil
end

-- The code of a line without its `--` comment (a `--` inside a string is kept).
local function code_of(line)
    local at, quote = 1, nil
    while at <= #line do
        local c = line:sub(at, at)
        if quote then
            if c == "\\" then at = at + 1 elseif c == quote then quote = nil end
        elseif c == '"' or c == "'" then
            quote = c
        elseif line:sub(at, at + 1) == "--" then
            return line:sub(1, at - 1)
        end
        at = at + 1
    end
    return line
end

--- The jsoncontract modules a Lua source requires, anywhere (top level or inside functions):
-- `require "x"`, `require("x")`, `require 'x'`, `require("x." .. name)` (as "x."); comments skipped
-- (a `--[[ ]]` block is not used in lua/).
-- @tparam string text Lua source
-- @treturn {{line=integer, name=string},...}
function _M.requires(text)
    local out, n = {}, 0
    for line in (text .. "\n"):gmatch("(.-)\n") do
        n = n + 1
        local code = code_of(line)
        for q, name in code:gmatch("require%s*%(?%s*([\"'])(jsoncontract[%w_%.]*)%1") do
            out[#out + 1] = { line = n, name = name, quote = q }
        end
    end
    return out
end

local function allows(room, target_room, name)
    if target_room == room then return true end
    for _, m in ipairs(room.may) do
        if m == "*" or m == target_room.name then return true end
    end
    for _, o in ipairs(room.only or {}) do
        if o[1] == name then return true end
    end
    return false
end

--- The edges the map does not allow, each as "file:line: room A requires name (room B), which
-- the map (tools/layout.lua) does not allow", and files in no room.
-- @tparam table layout
-- @tparam {{file=string, line=integer, name=string},...} edges
-- @tparam function exists `function(path) -> boolean`
-- @treturn {string,...} problems, sorted
function _M.check(layout, edges, exists)
    local bad, seen = {}, {}
    for _, e in ipairs(edges) do
        local room = _M.room_of_file(layout, e.file)
        if not room then
            if not seen[e.file] then
                seen[e.file] = true
                bad[#bad + 1] = e.file .. ": in no room of tools/layout.lua"
            end
        else
            local target = _M.room_of_module(layout, e.name, exists)
            if not target then
                bad[#bad + 1] = string.format("%s:%d: requires %s, which is no module of lua/ and no room's",
                    e.file, e.line, e.name)
            elseif not allows(room, target, e.name) then
                bad[#bad + 1] = string.format("%s:%d: room %s requires %s (room %s), which tools/layout.lua does "
                    .. "not allow", e.file, e.line, room.name, e.name, target.name)
            end
        end
    end
    table.sort(bad)
    return bad
end

--- The files in no room.
-- @tparam table layout
-- @tparam {string,...} files
-- @treturn {string,...}
function _M.unroomed(layout, files)
    local out = {}
    for _, f in ipairs(files) do
        if not _M.room_of_file(layout, f) then out[#out + 1] = f .. ": in no room of tools/layout.lua" end
    end
    return out
end

--- The `#include "..."` names of a C source, in order.
-- @tparam string text
-- @treturn {string,...}
function _M.includes(text)
    local out = {}
    for line in (text .. "\n"):gmatch("(.-)\n") do
        local name = line:match('^%s*#%s*include%s*"([^"]+)"')
        if name then out[#out + 1] = name end
    end
    return out
end

--- The include circles of a graph `{ [file] = {included file, ...} }`, each as "a -> b -> a".
-- @tparam table graph
-- @treturn {string,...}
function _M.cycles(graph)
    local state, out = {}, {}
    local names = {}
    for k in pairs(graph) do names[#names + 1] = k end
    table.sort(names)
    local function visit(m, stack)
        if state[m] == 1 then
            local from = 1
            for i, s in ipairs(stack) do if s == m then from = i end end
            local path = {}
            for i = from, #stack do path[#path + 1] = stack[i] end
            out[#out + 1] = table.concat(path, " -> ") .. " -> " .. m
            return
        end
        if state[m] == 2 or not graph[m] then return end
        state[m] = 1
        stack[#stack + 1] = m
        for _, d in ipairs(graph[m]) do visit(d, stack) end
        stack[#stack] = nil
        state[m] = 2
    end
    for _, m in ipairs(names) do visit(m, {}) end
    return out
end

--- The text between `<!-- layout:begin -->` and `<!-- layout:end -->` (both kept), or nil.
-- @tparam string doc
-- @treturn string|nil
function _M.section(doc)
    local s = doc:find("<!-- layout:begin -->", 1, true)
    local e = doc:find("<!-- layout:end -->", 1, true)
    if not s or not e then return nil end
    return doc:sub(s, e + #"<!-- layout:end -->") .. ""
end

return _M
