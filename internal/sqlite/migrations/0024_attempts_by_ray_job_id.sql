-- The Ray-Jobs door finds a job by the job id Ray gave its driver (JobDetails.job_id, e.g. "02000000"), as Ray's
-- own job server does (find_job_by_ids looks the job id up first): only attempts Ray has given one are indexed.
CREATE INDEX attempts_by_ray_job_id ON attempts (ray_job_id) WHERE ray_job_id != '';
