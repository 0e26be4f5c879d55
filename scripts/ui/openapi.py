import json
S=lambda n: {"$ref": f"#/components/schemas/{n}"}
def resp(schema, desc="OK"):
    return {"description": desc, "content": {"application/json": {"schema": schema}}}
errs={"400": {"$ref":"#/components/responses/BadRequest"}, "401": {"$ref":"#/components/responses/Unauthenticated"}}
acterrs=dict(errs, **{"403": {"$ref":"#/components/responses/Forbidden"}})
def getop(summary, schema, params=None, extra=None, desc=None):
    o={"summary": summary, "responses": {"200": resp(schema)}}
    o["responses"].update(errs)
    if extra: o["responses"].update(extra)
    if params: o["parameters"]=params
    if desc: o["description"]=desc
    return {"get": o}
def postop(summary, schema, body=None, extra=None, desc=None, public=False):
    o={"summary": summary, "responses": {"200": resp(schema)}}
    o["responses"].update(errs if public else acterrs)
    if extra: o["responses"].update(extra)
    if not public: o["parameters"]=[{"$ref":"#/components/parameters/Csrf"}]
    if body: o["requestBody"]={"required": False, "content":{"application/json":{"schema":body}}}
    if desc: o["description"]=desc
    return {"post": o}
idp={"$ref":"#/components/parameters/JobId"}
nf={"404": {"$ref":"#/components/responses/NotFound"}}
ws={"409": {"$ref":"#/components/responses/Conflict"}}
obj=lambda props, req=None: dict({"type":"object","properties":props}, **({"required":req} if req else {}))
strn={"type":["string","null"]}
intn={"type":["integer","null"]}
stateE={"type":"string","enum":["pending","leased","failed","completed","dead","cancelled"]}
counts=obj({k:{"type":"integer"} for k in ["pending","leased","failed","completed","dead","cancelled","total"]})
paused=obj({"kinds":{"type":"array","items":{"type":"string"}},"scopes":{"type":"array","items":{"type":"string"}}})
orderE={"type":"string","enum":["pending","leased","dead","name"]}
stats=obj({"by_kind":{"type":"object","additionalProperties":S("Counts")},"by_scope":{"type":"object","additionalProperties":S("Counts"),"description":"One page of counts per scope (tenant), keyed by the scope's UUID, in the page's order (scope_order: the most first, or by name); scopes with no jobs are omitted. The totals and by_kind are always whole."},"scope_order":orderE,"scopes_next":dict(strn,description="More scopes follow: pass as `after` (same order) for the next page; null on the last page."),"total":S("Counts"),"paused":S("Paused")})
point=obj({"ts_ms":{"type":"integer"},**{k:{"type":"number","description":"per second"} for k in ["enqueued","leased","completed","failed","dead"]}})
thr=obj({"interval_ms":{"type":"integer"},"points":{"type":"array","items":S("ThroughputPoint")}})
bytesv={"oneOf":[obj({"encoding":{"const":"msgpack"},"value":{}}),obj({"encoding":{"const":"utf8"},"value":{"type":"string"}}),obj({"encoding":{"const":"hex"},"value":{"type":"string"}}),obj({"encoding":{"const":"truncated"},"size":{"type":"integer"}})],"description":"A payload or result: the decoded value, UTF-8 text, hex, or (over 64 KiB) only its size; the raw bytes are at /jobs/{id}/payload and /result."}
limitst=obj({"target":{"type":"string"},"limit":obj({"concurrency":{"type":["integer","null"]},"rate":{"type":["number","null"]},"burst":{"type":["integer","null"]},"weight":{"type":["integer","null"]}}),"leased":{"type":"integer"},"held":{"type":"integer"},"throttled":obj({"concurrency":{"type":"integer"},"rate":{"type":"integer"}})})
job=obj({"id":{"type":"string","format":"uuid"},"scope":{"type":"string","format":"uuid"},"kind":{"type":"string"},"state":stateE,"priority":{"type":"integer"},"state_ts_ms":{"type":"integer"},"state_at":{"type":"string","format":"date-time"},"attempts":{"type":"integer"},"max_attempts":{"type":"integer"},"generation":{"type":"integer"},"worker_id":strn,"lease_deadline_ms":intn,"last_error":strn,"idempotency_key":strn,"created_at_ms":{"type":"integer"},"created_at":{"type":"string"},"cursor":{"type":"string"},"paused":{"type":"boolean"},"cancel_requested":strn,"snoozes":{"type":"integer"},"expires_at_ms":intn,"expires_at":strn,"progress":{},"schedule":{"type":["object","null"]},"parent":{"type":["string","null"],"format":"uuid"},"tags":{"type":"array","items":{"type":"string"},"description":"At most 16 tags, each 1 to 64 bytes"},"metadata":{"type":"object","additionalProperties":{"type":"string"},"description":"At most 4096 bytes (keys and values plus 2 per entry); never indexed"}})
event=obj({"ts_ms":{"type":"integer"},"at":{"type":"string"},"transition":{"type":"string"},"detail":{"type":"string"},"folded":{"type":"boolean"}})
full={"allOf":[S("Job"),obj({"payload":S("Bytes"),"result":{"oneOf":[S("Bytes"),{"type":"null"}]},"payload_encoding":{"type":"string"},"result_encoding":strn,"payload_size":{"type":"integer"},"result_size":intn,"events":{"type":"array","items":S("Event")},"dropped_events":{"type":"integer"}})]}
sched=obj({"name":{"type":"string"},"spec":{"type":"string"},"timezone":strn,"kind":{"type":"string"},"paused":{"type":"boolean"},"catch_up":{"type":"string"},"next_slot_ms":intn,"next_slot":strn,"last_slot_ms":intn,"last_job":strn,"last_fired_at_ms":intn,"enqueued":{"type":"integer"},"skipped":{"type":"integer"},"last_error":strn},None)
sched["additionalProperties"]=True
error=obj({"error":obj({"code":{"type":"string","description":"The core's stable code (NOT_FOUND, INVALID_ARGUMENT, WRONG_STATE, ...) or UNAUTHENTICATED, FORBIDDEN, READ_ONLY, METHOD_NOT_ALLOWED."},"message":{"type":"string"}},["code","message"])},["error"])
filt=obj({"state":stateE,"kind":{"type":"string","description":"A kind or a family (mail:*)"},"scope":{"type":"string","format":"uuid"}})
q=lambda n,d,schema={"type":"string"}: {"name":n,"in":"query","required":False,"description":d,"schema":schema}
doc={
 "openapi":"3.1.0",
 "info":{"title":"telha-jobs operator API","version":"1","description":"The JSON API behind the operator web page of `telha serve --ui` (and `serve(ui=True)` in a host). Reads are counter reads or one bounded list page (no full scan). With a server token: send `Authorization: Bearer <token>`, or log in (POST /login) for a session cookie. Every state-changing request is a POST with a JSON body; a cookie session (or a server without a token) must send the `X-CSRF-Token` header from GET /info. Errors are `{\"error\": {\"code\", \"message\"}}`."},
 "servers":[{"url":"/api/v1"}],
 "components":{
  "securitySchemes":{"bearer":{"type":"http","scheme":"bearer"},"session":{"type":"apiKey","in":"cookie","name":"telha_session"}},
  "parameters":{"JobId":{"name":"id","in":"path","required":True,"schema":{"type":"string","format":"uuid"}},
                "Csrf":{"name":"X-CSRF-Token","in":"header","required":False,"description":"Required unless the request carries the bearer header: the `csrf` of GET /info or POST /login.","schema":{"type":"string"}}},
  "responses":{k:{"description":d,"content":{"application/json":{"schema":S("Error")}}} for k,d in [("BadRequest","INVALID_ARGUMENT: a malformed id, filter, field or body"),("Unauthenticated","UNAUTHENTICATED: no session or bearer token"),("Forbidden","FORBIDDEN (no or wrong CSRF token, cross-site Origin, non-loopback Host without a token) or READ_ONLY"),("NotFound","NOT_FOUND"),("Conflict","WRONG_STATE or ABORTED: the job is not in a state the action moves")]},
  "schemas":{"Counts":counts,"Paused":paused,"Stats":stats,"ThroughputPoint":point,"Throughput":thr,"Bytes":bytesv,"Job":job,"Event":event,"JobFull":full,"Schedule":sched,"Error":error,"Filter":filt,"LimitStatus":limitst}
 },
 "security":[{"bearer":[]},{"session":[]},{}],
 "paths":{}
}
P=doc["paths"]
P["/info"]=getop("Version, modes, whether this request is authenticated, and its CSRF token",obj({"version":{"type":"string"},"read_only":{"type":"boolean"},"auth_required":{"type":"boolean"},"authenticated":{"type":"boolean"},"csrf":strn,"assets_bytes":{"type":"integer"}}))
P["/login"]=postop("Log in with the server's token: sets the HttpOnly, SameSite=Strict session cookie",obj({"ok":{"type":"boolean"},"csrf":{"type":"string"}}),obj({"token":{"type":"string"}},["token"]),public=True)
P["/logout"]=postop("End the session and clear its cookie",obj({"ok":{"type":"boolean"}}),public=True)
P["/overview"]=getop("Counts per kind and state, the 20 scopes with the most pending jobs, throughput, leases in flight, schedules",obj({"stats":S("Stats"),"throughput":S("Throughput"),"leased_in_flight":{"type":"integer"},"schedules":{"type":"integer"},"limits":{"type":"array","items":S("LimitStatus")},"now_ms":{"type":"integer"}}))
scopeq=lambda dl,do: [q("order",f"Which scopes: the most pending, leased or dead first, or by name (default {do})",orderE),q("limit",f"0 to 1000 scopes, default {dl}",{"type":"integer","minimum":0,"maximum":1000}),q("after","The previous page's `scopes_next` / `next` (same order)"),q("prefix","Only scopes whose UUID text starts with this (hex digits and dashes)")]
P["/stats"]=getop("Exact counts per kind and state (the counters, never a scan), one page of per-scope counts, and what is paused",S("Stats"),scopeq(100,"pending"),desc="The overview carries the top 20 scopes by pending; this takes the same parameters as /scopes.")
P["/scopes"]=getop("One page of per-scope counts: by name with a cursor (a range read), or the top N by a count (an in-memory index ordered by count)",obj({"scopes":{"type":"array","items":obj({"scope":{"type":"string","format":"uuid"},"counts":S("Counts")})},"order":orderE,"next":strn,"paused":{"type":"array","items":{"type":"string"},"description":"Paused scopes"}}),scopeq(50,"name"),desc="Unknown query parameters are refused (INVALID_ARGUMENT).")
P["/throughput"]=getop("Transitions per second over the last 15 minutes, sampled every 5 s",S("Throughput"))
P["/jobs"]=getop("One page of jobs in key order, with the filters and cursor of `list`",obj({"jobs":{"type":"array","items":S("Job")},"next":strn,"corrupt":{"type":"integer"}}),[q("state","One state",stateE),q("kind","A kind or family (mail:*)"),q("scope","A scope (UUID)"),q("schedule","Jobs of this schedule"),q("parent","Follow-up jobs of this parent (UUID)"),q("tag","Jobs carrying this tag, read from the tag index (O(page)); send the page's cursors back with the same tag"),q("limit","1 to 500, default 50",{"type":"integer","minimum":1,"maximum":500}),q("after","The previous page's `next`")],desc="Unknown query parameters are refused (INVALID_ARGUMENT).")
P["/jobs/{id}"]=getop("One job with its event log, payload and result",S("JobFull"),[idp],nf)
P["/jobs/{id}/payload"]={"get":{"summary":"The payload's raw bytes","parameters":[idp],"responses":dict({"200":{"description":"The bytes","content":{"application/octet-stream":{}}}},**errs,**nf)}}
P["/jobs/{id}/result"]={"get":{"summary":"The result's raw bytes (404 when there is none)","parameters":[idp],"responses":dict({"200":{"description":"The bytes","content":{"application/octet-stream":{}}}},**errs,**nf)}}
def withid(op):
    k=list(op)[0]; op[k]["parameters"]=[idp]+op[k].get("parameters",[]); return op
P["/jobs/{id}/retry"]=withid(postop("Send a dead or failed job back to pending, attempts reset",obj({"ok":{"type":"boolean"},"job":S("JobFull")}),extra=dict(nf,**ws)))
P["/jobs/{id}/cancel"]=withid(postop("Cancel a job (a leased one: cancel requested)",obj({"outcome":{"type":"string"},"job":S("JobFull")}),obj({"reason":{"type":"string"}}),extra=dict(nf,**ws)))
P["/jobs/{id}/delete"]=withid(postop("Delete a job",obj({"ok":{"type":"boolean"}}),extra=dict(nf,**ws)))
P["/jobs/{id}/promote"]=withid(postop("Make a delayed or retry-waiting job ready now (its state kept; a job already due is left as it is)",obj({"ok":{"type":"boolean"},"job":S("JobFull")}),extra=dict(nf,**ws)))
P["/jobs/{id}/reschedule"]=withid(postop("Give a pending or failed job a new run time: run_at (RFC 3339 or ms since the epoch) or delay from now (\"2h\"); in the future a ready job becomes delayed",obj({"ok":{"type":"boolean"},"job":S("JobFull")}),obj({"run_at":{"type":["string","integer"]},"delay":{"type":"string"}}),extra=dict(nf,**ws)))
P["/jobs/{id}/priority"]=withid(postop("Give a pending or failed job a new priority, 0 (most urgent) to 255",obj({"ok":{"type":"boolean"},"job":S("JobFull")}),obj({"priority":{"type":"integer","minimum":0,"maximum":255}},["priority"]),extra=dict(nf,**ws)))
P["/retry"]=postop("Retry every dead (default) or failed job matching kind and scope",obj({"retried":{"type":"integer"},"errors":{"type":"integer","description":"Jobs another caller moved meanwhile"}}),S("Filter"))
P["/cancel"]=postop("Cancel every job matching the filter",obj({"cancelled":{"type":"integer"},"requested":{"type":"integer"},"corrupt":{"type":"integer"}}),{"allOf":[S("Filter"),obj({"reason":{"type":"string"}})]})
P["/purge"]=postop("Delete completed, dead or cancelled jobs older than older_than_ms",obj({"purged":{"type":"integer"},"corrupt":{"type":"integer"}}),obj({"state":{"type":"string","enum":["completed","dead","cancelled"]},"older_than_ms":{"type":"integer","minimum":0}},["state"]))
tgt=obj({"target":{"type":"string","description":"kind:NAME, kind:FAMILY:* or scope:UUID"}},["target"])
P["/pause"]=postop("Pause a kind, family or scope (its pending jobs stay, none is leased)",obj({"changed":{"type":"boolean"},"paused":S("Paused")}),tgt)
P["/resume"]=postop("Resume a kind, family or scope",obj({"changed":{"type":"boolean"},"paused":S("Paused")}),tgt)
P["/leases"]=getop("Leases in flight grouped by worker (at most 2000)",obj({"workers":{"type":"array","items":obj({"worker_id":{"type":"string"},"leases":{"type":"array","items":obj({"id":{"type":"string"},"kind":{"type":"string"},"scope":{"type":"string"},"attempts":{"type":"integer"},"generation":{"type":"integer"},"lease_deadline_ms":{"type":"integer"},"lease_deadline":{"type":"string"}})}})},"truncated":{"type":"boolean"}}))
P["/limits"]=getop("Every flow-control limit with its use now",obj({"limits":{"type":"array","items":S("LimitStatus")}}))
P["/schedules"]=getop("Every schedule with its progress",obj({"schedules":{"type":"array","items":S("Schedule")}}))
np={"name":"name","in":"path","required":True,"schema":{"type":"string"}}
for v in ["pause","resume"]:
    op=postop(f"{v.capitalize()} a schedule",S("Schedule"),extra=nf); op["post"]["parameters"].insert(0,np)
    P[f"/schedules/{{name}}/{v}"]=op
print(json.dumps(doc,indent=1))
