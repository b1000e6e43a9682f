--[[
job_submit.lua for a Slurm partition driven by schedlab (`schedlab live serve --executor slurm`).

Every job that enters the driven partition is held (priority 0 set here is an admin hold,
WAIT_HELD: only an operator, schedlab's account, can release it). schedlab pins each job to
the nodes its policy chose (ReqNodeList, NumNodes) and releases it; Slurm then starts it.

  - A submission to the driven partition, or with no partition while it is the default one,
    is held, and made requeueable (schedlab stops a run with `scontrol requeuehold`).
  - A submission naming several partitions, one of them driven, is refused: schedlab must be
    the only one that can start it.
  - `sbatch -H` (a user hold, which its user could release) is refused in the driven
    partition: the job is held for you.
  - A pending job moved into the driven partition (`scontrol update Partition=`) is held.
  - In the driven partition, only schedlab's account (and root) may hold, release or pin a
    job (Priority=, ReqNodeList=, ExcNodeList=): Slurm 22.05 records a hold set by this
    plugin as a user hold (JobHeldUser), which its user could otherwise release.

Install: copy next to slurm.conf, set JobSubmitPlugins=lua, and `scontrol reconfigure`.
Set DRIVEN below to the partition schedlab drives and SCHEDLAB_UIDS to the uid of the account
schedlab runs as (docs/slurm-executor.md).
]]

local DRIVEN = "gpu"
-- Who may hold, release and pin the driven partition's jobs: root and schedlab's account.
local SCHEDLAB_UIDS = { [0] = true }
-- Whether jobs that name no partition land in DRIVEN (true when it is Default=YES).
local DRIVEN_IS_DEFAULT = true

local function names_driven(partitions)
	if partitions == nil or partitions == "" then
		return DRIVEN_IS_DEFAULT, false
	end
	local driven, count = false, 0
	for name in string.gmatch(partitions, "[^,]+") do
		count = count + 1
		if name == DRIVEN then
			driven = true
		end
	end
	return driven, count > 1
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local driven, several = names_driven(job_desc.partition)
	if not driven then
		return slurm.SUCCESS
	end
	if several then
		slurm.log_user("partition %s is scheduled by schedlab: submit to it alone", DRIVEN)
		return slurm.ERROR
	end
	if job_desc.priority == 0 then
		slurm.log_user("partition %s holds every job for schedlab: submit without -H", DRIVEN)
		return slurm.ERROR
	end
	job_desc.priority = 0
	-- Requeueable, so that schedlab can stop a run (scontrol requeuehold) and start the job
	-- again. A run its node's failure ends is requeued by Slurm with a begin time 20 minutes
	-- ahead (the launch credential's lifetime): schedlab holds it long before.
	job_desc.requeue = 1
	return slurm.SUCCESS
end

-- What only schedlab may change on a job of the driven partition.
local function schedules(job_desc)
	return (job_desc.priority ~= nil and job_desc.priority ~= slurm.NO_VAL)
		or job_desc.req_nodes ~= nil
		or job_desc.exc_nodes ~= nil
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	if job_rec.partition == DRIVEN and not SCHEDLAB_UIDS[modify_uid] and schedules(job_desc) then
		slurm.log_user("partition %s is scheduled by schedlab: its jobs are held, released and placed by schedlab", DRIVEN)
		return slurm.ERROR
	end
	if job_desc.partition == nil then
		return slurm.SUCCESS
	end
	local driven, several = names_driven(job_desc.partition)
	if driven and several then
		slurm.log_user("partition %s is scheduled by schedlab: move a job to it alone", DRIVEN)
		return slurm.ERROR
	end
	if driven and job_rec.partition ~= DRIVEN then
		job_desc.priority = 0
		job_desc.requeue = 1
	end
	return slurm.SUCCESS
end

slurm.log_info("job_submit.lua: partition %s is held for schedlab", DRIVEN)
return slurm.SUCCESS
