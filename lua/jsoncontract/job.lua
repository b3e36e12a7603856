--- Batch jobs from a Lua script, through the same code as `jsoncontract run`, `--resume`,
-- `status` and `export` (`jsoncontract.cli.job_commands`):
--
--    local jc = require "jsoncontract"
--    local job = assert(jc.job("examples/leave_request.lua", { input = "examples/leave_request.jsonl",
--        out = "out/leave" }))
--    local summary = assert(job:run { parallel = 4 })   -- summary.json as a table
--
-- Without an API key in the environment the embedded stand-in answers (any schema). Every
-- method returns `nil, message` on failure (the message the command prints), never raises.
-- @module jsoncontract.job
local core = require "jsoncontract.core"
local definition = require "jsoncontract.jobs.definition"

local type, pairs, tostring, setmetatable, select = type, pairs, tostring, setmetatable, select
local concat = table.concat

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

-- The folder holding examples/ (the stand-in's knowledge of the examples): the checkout this file
-- is in, or an installed share/jsoncontract.
local function root_dir()
    local source = debug.getinfo(1, "S").source
    local prefix = source:match("^@(.-)/?lua/jsoncontract/job%.lua$")
    if prefix then return prefix == "" and "." or prefix end
    local installed = source:match("^@(.-)/share/lua/[^/]+/jsoncontract/job%.lua$")
    return installed and (installed .. "/share/jsoncontract") or "."
end

-- A sink the commands write to: what they say is kept, so a failure returns it.
local function sink()
    local parts = {}
    return { write = function(self, ...)
        for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
        return self
    end, text = function() return concat(parts) end }
end

--- A job of a job module over an input.
-- @param module a job module's path, or the module table (`{contract =, item =, context =}`,
--   see `jsoncontract.jobs.definition`)
-- @tparam table opts `input` (JSONL file; needed to run), `out` (the job's folder: new or empty
--   for `run`, the folder of a job for `resume`, `status`, `export`), `store` (URL, default
--   `<out>/job.sqlite`), and any option of `jsoncontract run` by its command-line name
--   (`["max-attempts"] = 2`, `provider`, `model`, `["base-url"]`, `limit`, `seed`, `["delay-ms"]`,
--   `["record-text"] = true`, ...)
-- @treturn[1] table job with `run`, `resume`, `status`, `export`
-- @return[2] nil
-- @treturn[2] string message (the module cannot load, or its rules have no context)
function _M.new(module, opts)
    if opts ~= nil and type(opts) ~= "table" then return nil, "jc.job: opts must be a table" end
    -- stored absolute, as `run` does: `resume` and workers find it from any folder
    if type(module) == "string" then module = require("jsoncontract.cli.job_commands").absolute(module) end
    local def, err = definition.load(module)
    if not def then return nil, err end
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    return setmetatable({ def = def, o = o }, mt)
end

-- Run a command of `jsoncontract.cli.job_commands` with our options plus `more`; the exit status
-- and what it wrote.
local function call(self, name, more)
    local o = {}
    for k, v in pairs(self.o) do o[k] = v end
    for k, v in pairs(more or {}) do o[k] = v end
    o.job_def, o.command = self.def, "run"
    local out, err = sink(), sink()
    local code = require("jsoncontract.cli.job_commands")[name](o, { root = root_dir(), bindir = ".", stdout = out,
        stderr = err })
    return code, out.text(), err.text()
end

local function failed(code, said)
    local msg = said:gsub("^jsoncontract: ", ""):gsub("\njsoncontract: ", "\n"):gsub("%s+$", "")
    if msg == "" then msg = "the job ended with exit status " .. tostring(code) end
    return nil, msg
end

local function summary_of(self)
    local dir = self.o.out
    if not dir then return nil, "the job has no folder (opts.out) to read summary.json from" end
    local f, ferr = io.open(dir .. "/summary.json", "rb")
    if not f then return nil, tostring(ferr) end
    local s = f:read("*a")
    f:close()
    local v, derr = core.decode(s)
    if type(v) ~= "table" then return nil, dir .. "/summary.json: " .. tostring(derr and derr.message) end
    return v
end

-- The last line of what a command said that names a failure (its "jsoncontract: ..." lines).
local function complaint(said)
    local lines = {}
    for line in said:gmatch("[^\n]+") do
        if line:find("^jsoncontract: ") then lines[#lines + 1] = line end
    end
    return concat(lines, "\n")
end

--- Run the job: a new job in `opts.out` (as `jsoncontract run`).
-- @tparam[opt] table ropts `parallel`, `grace`, `rpm`, `tpm`, `["lease-seconds"]`
-- @treturn[1] table the summary (summary.json)
-- @return[2] nil
-- @treturn[2] string message
function _M.run(self, ropts)
    if not self.o.out then return nil, "jc.job: run needs opts.out, the job's folder (new or empty)" end
    local code, _, said = call(self, "run", ropts)
    if code ~= 0 then return failed(code, complaint(said)) end
    return summary_of(self)
end

--- Continue the job in `opts.out` (as `jsoncontract run --resume DIR`).
-- @tparam[opt] table ropts as for `run`, and `["retry-review"] = true`
-- @treturn[1] table summary
-- @return[2] nil
-- @treturn[2] string message
function _M.resume(self, ropts)
    if not self.o.out then return nil, "jc.job: resume needs opts.out, the job's folder" end
    local more = { resume = self.o.out }
    for k, v in pairs(ropts or {}) do more[k] = v end
    local code, _, said = call(self, "resume", more)
    if code ~= 0 then return failed(code, complaint(said)) end
    return summary_of(self)
end

--- Progress and per-gate counts (as `jsoncontract status --json`).
-- @treturn[1] table status (`items`, `accepted`, `human_review`, `pending`, `leased`, `metrics`, ...)
-- @return[2] nil
-- @treturn[2] string message
function _M.status(self)
    local code, said, err = call(self, "status", { dir = self.o.out, json = true })
    if code ~= 0 then return failed(code, complaint(err)) end
    local v = core.decode(said)
    if type(v) ~= "table" then return nil, "status: unreadable answer" end
    return v
end

--- Write the exports again from the store (as `jsoncontract export`): accepted.jsonl,
-- review.jsonl, evidence.jsonl, summary.json in `opts.out` (or `dir`).
-- @tparam[opt] string dir another folder to write to
-- @treturn[1] table summary
-- @return[2] nil
-- @treturn[2] string message
function _M.export(self, dir)
    local code, _, err = call(self, "export", { dir = self.o.out, out = dir or self.o.out })
    if code ~= 0 then return failed(code, complaint(err)) end
    if dir then
        local other = setmetatable({ def = self.def, o = { out = dir } }, mt)
        return summary_of(other)
    end
    return summary_of(self)
end

return _M
