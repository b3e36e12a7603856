--- `jsoncontract review`: serve the review desk of a job through nginx (see
-- `jsoncontract.review.serve`). Exit 130 after SIGINT, 143 after SIGTERM, 1 when the desk
-- cannot start (a missing store, job, contract, auth file or nginx), 2 on a usage error.
-- @module jsoncontract.cli.review
local serve = require "jsoncontract.review.serve"

return {
    name = "review",
    summary = "Serve the review desk of a job (its folder or its store URL) through nginx.",
    configure = function(parser)
        parser:argument("target", "The job's output folder, its SQLite store file, or a postgresql:// store URL.")
        parser:option("--listen", "HOST:PORT to serve on; beyond 127.0.0.1 only with --auth.", serve.DEFAULT_LISTEN)
        parser:option("--auth", "Reviewers, one name:secret per line (HTTP Basic auth, bearer token, /login?token=).")
        parser:option("--allow-host", "Also answer to this Host name (repeatable); other Hosts get 421."):count("*")
        parser:flag("--tls", "The desk is reached over HTTPS (a TLS proxy in front): Secure cookie, https Origin.")
        parser:option("--trusted-proxy", "Address or CIDR of a proxy whose X-Forwarded-For names the client "
            .. "(repeatable)."):count("*")
        parser:option("--contract", "Lua file returning {contract=...} (default: examples/<the job's contract>.lua).")
        parser:option("--job", "Job id (default: the store's latest job).")
        parser:option("--context", "Folder the contract's rules read the run's data from (default: the job folder).")
    end,
    run = function(args, env)
        return serve.run({ target = args.target, listen = args.listen, auth = args.auth, contract = args.contract,
            job = args.job, context = args.context, allow_host = args.allow_host, tls = args.tls,
            trusted_proxy = args.trusted_proxy }, env)
    end,
}
