"""Everything activation adds to the project's one ``Definitions``."""

from memory_pipeline.activation.assets import activation_assets, activation_job
from memory_pipeline.activation.schedules import activation_schedule

ASSETS = [*activation_assets]
JOBS = [activation_job]
SENSORS: list = []
SCHEDULES = [activation_schedule]
