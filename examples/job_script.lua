--- A batch job from a Lua script: the leave-request job module over its shipped input, then its
-- status and an export, through the same code as `jsoncontract run`. Without an API key the
-- embedded stand-in answers.
--   lua5.4 examples/job_script.lua OUT_DIR      (OUT_DIR: a new or empty folder)
-- Spec: spec/job_api_spec.lua.
local jc = require "jsoncontract"

local out = arg[1] or ("out/job-script-" .. os.time())
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"

local job, err = jc.job(here .. "leave_request.lua", { input = here .. "leave_request.jsonl", out = out,
    ["delay-ms"] = 0 })
if not job then error(err, 0) end
local summary
summary, err = job:run { parallel = 4 }
if not summary then
    io.stderr:write("job failed: ", err, "\n")
    os.exit(1)
end
print(("%d items: %d accepted, %d to review (%s/accepted.jsonl, %s/review.jsonl)"):format(summary.items,
    summary.accepted, summary.human_review, out, out))
local status = assert(job:status())
print(("status: %d of %d decided"):format(status.accepted + status.human_review, status.items))
assert(job:export())
