--- What the commands of `jsoncontract` share: failing with a usage error, reading files,
-- folders (through LuaFileSystem, never the shell), loading contracts and schemas, reading a
-- mailbox, choosing a provider, starting the stand-in, and the OpenAI envelope of a recorded
-- reply.
-- @module jsoncontract.cli.util
local core = require "jsoncontract.core"
local secrets = require "jsoncontract.secrets"
local setup = require "jsoncontract.setup"
local lfs = require "lfs"

local type, tostring, pcall, dofile, ipairs = type, tostring, pcall, dofile, ipairs
local format = string.format
local concat = table.concat

local _M = { _VERSION = core._VERSION }

-- JSON text keeps its property order (decode keep_order; see contract/init.lua).
local KEEP_ORDER = { keep_order = true }

--- Write "jsoncontract: <msg>" to the error stream; the exit status of a usage error.
-- @tparam table env the command's environment (`stderr`)
-- @tparam string msg
-- @treturn integer 2
function _M.fail(env, msg)
    -- The keys a run may hold never reach the terminal, in any spelling.
    env.stderr:write("jsoncontract: ", secrets.clean(msg, setup.key_values(), 4000), "\n")
    return 2
end

----------------------------------------------------------------------------
-- Files and folders
----------------------------------------------------------------------------

--- The whole file, or nil and a message ("<path>: Is a directory" for a folder).
-- @tparam string path
-- @treturn[1] string bytes
-- @return[2] nil
-- @treturn[2] string message
function _M.read_file(path)
    local f, msg = io.open(path, "rb")
    if not f then return nil, msg end
    local s, rerr = f:read("*a")
    f:close()
    if not s then return nil, path .. ": " .. tostring(rerr) end -- e.g. a folder
    return s
end

--- What is at `path`: "file", "directory", another lfs mode, or nil when nothing is.
-- @tparam string path
-- @treturn string|nil
function _M.kind(path)
    return lfs.attributes(path, "mode")
end

--- Is the folder empty (no entry besides "." and "..")?
-- @tparam string dir an existing folder
-- @treturn boolean
function _M.is_empty_dir(dir)
    local ok, iter, state = pcall(lfs.dir, dir)
    if not ok then return false end
    for name in iter, state do
        if name ~= "." and name ~= ".." then return false end
    end
    return true
end

--- Create a folder and its parents (as `mkdir -p` does).
-- @tparam string dir
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string message
function _M.mkdir_p(dir)
    local path = dir:sub(1, 1) == "/" and "/" or ""
    for part in dir:gmatch("[^/]+") do
        path = path .. part
        local mode = lfs.attributes(path, "mode")
        if mode == nil then
            local ok, msg = lfs.mkdir(path)
            if not ok and lfs.attributes(path, "mode") ~= "directory" then return nil, msg end
        elseif mode ~= "directory" then
            return nil, path .. " is not a folder"
        end
        path = path .. "/"
    end
    return true
end

--- Make `dir` ready for a run's output: it must be a new or empty folder. Nothing is
-- overwritten.
-- @tparam string dir
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string message
function _M.prepare_out_dir(dir)
    local mode = _M.kind(dir)
    if mode ~= nil and mode ~= "directory" then
        return nil, "output path " .. dir .. " exists and is not a folder (nothing was overwritten)"
    end
    if mode == "directory" and not _M.is_empty_dir(dir) then
        return nil, "output folder " .. dir .. " is not empty; choose a new one (nothing was overwritten)"
    end
    local ok, msg = _M.mkdir_p(dir)
    if not ok then return nil, "cannot create output folder " .. dir .. ": " .. tostring(msg) end
    return true
end

--- A folder name that is not taken: `base`, else `base-2`, `base-3`, ...
-- @tparam string base
-- @treturn string
function _M.free_name(base)
    local dir, n = base, 1
    while _M.kind(dir) ~= nil do
        n = n + 1
        dir = base .. "-" .. n
    end
    return dir
end

--- Is the stream a terminal? (lua-term when installed; else, for the three standard streams,
-- what /proc/self/fd/<n> points at, as on Linux; else no.)
-- @param stream an io file
-- @treturn boolean
function _M.isatty(stream)
    local ok, term = pcall(require, "term")
    if ok and type(term.isatty) == "function" then return term.isatty(stream) and true or false end
    local fd = (stream == io.stdin and 0) or (stream == io.stdout and 1) or (stream == io.stderr and 2)
    local target = fd and lfs.symlinkattributes("/proc/self/fd/" .. fd, "target")
    return type(target) == "string" and (target:find("^/dev/pts/") or target:find("^/dev/tty")) ~= nil
end

----------------------------------------------------------------------------
-- Contracts, schemas, mailboxes
----------------------------------------------------------------------------

--- Load a contract file (`jsoncontract.setup.load_contract`).
_M.load_contract = setup.load_contract

--- A schema from a contract Lua file (its `contract.schema`, or `schema`) or a JSON Schema file.
-- Only a schema the validator accepts is returned: no verdicts about non-schemas.
-- @tparam string path
-- @treturn[1] table|boolean schema
-- @treturn[1] string|nil the contract's version, when a contract file
-- @return[2] nil
-- @treturn[2] string message
function _M.load_schema(path)
    if path:match("%.lua$") then
        local ok, mod = pcall(dofile, path)
        if not ok then return nil, "cannot load " .. path .. ": " .. tostring(mod) end
        if type(mod) == "table" and type(mod.contract) == "table" and mod.contract.schema ~= nil then
            return mod.contract.schema, mod.contract.version
        end
        if type(mod) == "table" and mod.schema ~= nil then return mod.schema end
        return nil, path .. " must return a table with a 'contract' or 'schema' field"
    end
    local text, err = _M.read_file(path)
    if not text then return nil, err end
    -- the author's property order is kept: the prompt lists fields in it
    local v, derr = core.decode(text, KEEP_ORDER)
    if v == nil then return nil, path .. " is not JSON: " .. derr.message end
    if type(v) ~= "table" and type(v) ~= "boolean" then return nil, path .. " is not a JSON Schema" end
    local ok, cerr = pcall(core.compile, v)
    if not ok then return nil, path .. ": " .. tostring(cerr) end
    return v
end

--- Read a JSONL mailbox. A line that is not a JSON object with a string `text` becomes an item
-- with `input_error`, so it still ends in the review queue: nothing is lost. The reading is the
-- jobs' (`jsoncontract.cli.job_commands.read_mailbox`, each line decoded as `jobs.runner.item_of`
-- does), so ids, "line-N" for a line without one, and the refusal of duplicate ids are the
-- same in every command that reads a mailbox.
-- @tparam string path a file, or "-" for stdin
-- @tparam[opt] integer limit only the first `limit` messages
-- @treturn[1] table items `{id, text, ...}` or `{id, input_error}`
-- @return[2] nil
-- @treturn[2] string message (one line per duplicate id)
function _M.read_mailbox(path, limit)
    local lines, err = require("jsoncontract.cli.job_commands").read_mailbox(path, limit)
    if not lines then return nil, err end
    local item_of = require("jsoncontract.jobs.runner").item_of
    local items = {}
    for i, line in ipairs(lines) do items[i] = item_of(line) end
    return items
end

----------------------------------------------------------------------------
-- Providers and the stand-in
----------------------------------------------------------------------------

--- Which provider, model, key and base URL (`jsoncontract.setup.choose_provider`).
_M.choose_provider = setup.choose_provider

--- An argparse `convert` for `--provider`: the name when known, else nil and a message that
-- lists all the providers.
-- @tparam string name
-- @treturn string|nil
-- @treturn string|nil message
function _M.provider_name(name)
    local providers = require "jsoncontract.providers"
    for _, n in ipairs(providers.names) do
        if n == name then return name end
    end
    return nil, "unknown provider " .. name .. " (known: " .. concat(providers.names, ", ") .. ")"
end

--- An argparse `convert` for a whole number option (>= 0).
-- @tparam string option the option's name, for the message
-- @treturn function
function _M.whole(option)
    return function(v)
        local n = tonumber(v)
        if n and n >= 0 and n % 1 == 0 then return n end
        return nil, "option " .. option .. " needs a whole number"
    end
end

--- An argparse `convert` for `--latency`: the spec when the stand-in understands it
-- (`jsoncontract.cli.job_commands.check_latency`), else nil and a message naming the option and
-- the values it takes.
-- @tparam string spec
-- @treturn string|nil
-- @treturn string|nil message
function _M.latency(spec)
    local ok, err = require("jsoncontract.cli.job_commands").check_latency(spec)
    if not ok then return nil, err end
    return spec
end

local shell_quote = require("jsoncontract.util").shell_quote

--- The interpreter running us (`jsoncontract.setup.interpreter`).
_M.interpreter = setup.interpreter

--- Start a helper program of ours (`bindir/<script> args...`) that prints a line with its port
-- first; returns the pipe and the port.
-- @tparam string script path of the script
-- @tparam string args already quoted arguments
-- @tparam string pattern captures the port in the first line
-- @treturn[1] file the pipe
-- @treturn[1] string port
-- @return[2] nil
-- @treturn[2] string the first line (for the message)
function _M.start_helper(script, args, pattern)
    -- The child finds our modules where we found them (an installed tree need not be on the
    -- default paths: LuaRocks' wrapper sets them for us only).
    local paths = format("package.path=%q package.cpath=%q", package.path, package.cpath)
    local proc = io.popen(format("%s -e %s %s %s", shell_quote(_M.interpreter()), shell_quote(paths),
        shell_quote(script), args), "r")
    local line = proc and proc:read("*l")
    local port = line and line:match(pattern)
    if not port then
        if proc then proc:close() end
        return nil, tostring(line)
    end
    return proc, port
end

--- Start the stand-in model server for a command: `jsoncontract.standin.process.start` with the
-- examples this command runs with, seed 1, no delay; should we die without stopping it, it
-- leaves with us (exit_with_parent) or after two idle minutes.
-- @tparam table env the command's env (`root`: the folder holding examples/)
-- @treturn[1] table handle `{pid, port, base_url, stop}`
-- @return[2] nil
-- @treturn[2] string message
function _M.start_standin(env)
    return require("jsoncontract.standin.process").start { examples_dir = env.root .. "/examples", seed = 1,
        delay_ms = 0, max_seconds = 21600, idle_seconds = 120 }
end

--- An OpenAI Chat Completions envelope around `content` (a recorded or scripted reply).
-- @tparam string|nil content nil: JSON null
-- @tparam[opt="stop"] string finish finish_reason
-- @tparam[opt] string refusal
-- @treturn string the JSON body
function _M.openai_envelope(content, finish, refusal)
    return core.encode {
        id = "chatcmpl-recorded", object = "chat.completion", model = "recorded-1",
        choices = setmetatable({ { index = 0, finish_reason = finish or "stop",
            message = { role = "assistant", content = content == nil and core.null or content,
                refusal = refusal or core.null } } }, core.array_mt),
        usage = { prompt_tokens = 50, completion_tokens = 10, total_tokens = 60 },
    }
end

return _M
