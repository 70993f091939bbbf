-- Tasks made through the Ray Jobs door got priority 0 (the door's request names none, and the default was not
-- given), so every later jobspec task overtook them. They get the default a jobspec naming none gets: no door task
-- ever asked for 0.
UPDATE tasks SET priority = 50 WHERE workload = 'ray_job' AND priority = 0;
