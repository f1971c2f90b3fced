"""Hospital: departments, doctors, patients and appointments; a patient-information leaflet corpus."""

from __future__ import annotations

import random

from data.build._names import CITIES, FIRST_NAMES, LAST_NAMES
from data.build._toolkit import Domain, Table, endpoint, retriever, slot_family, write

DEPARTMENTS = [("D1", "Cardiology", 2), ("D2", "Dermatology", 1), ("D3", "Neurology", 3), ("D4", "Orthopaedics", 2), ("D5", "Paediatrics", 1)]
TIMES = ["09:00", "09:30", "10:00", "10:30", "11:00", "14:00", "14:30", "15:00"]
DATES = [f"2026-03-{d:02d}" for d in range(2, 28) if d % 7 not in (0, 1)]


def build(rng: random.Random) -> Domain:
    doctors = []
    for i in range(1, 21):
        dept = DEPARTMENTS[(i - 1) % len(DEPARTMENTS)]
        doctors.append((f"DR{i:02d}", f"Dr. {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}", dept[0], rng.randint(2, 32)))
    patients = [(f"PT{i:03d}", f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}", rng.randint(1940, 2020), rng.choice(CITIES[:8])) for i in range(1, 151)]
    appts, taken = [], set()
    for i in range(1, 301):
        while True:
            doc, date, time = rng.choice(doctors)[0], rng.choice(DATES), rng.choice(TIMES)
            if (doc, date, time) not in taken:
                taken.add((doc, date, time))
                break
        appts.append((i, rng.choice(patients)[0], doc, date, time, rng.choices(["booked", "completed", "cancelled", "no_show"], weights=[5, 6, 1, 1])[0]))
    tables = [
        Table("departments", "CREATE TABLE departments (department_id TEXT PRIMARY KEY, name TEXT NOT NULL, floor INTEGER NOT NULL)", DEPARTMENTS),
        Table(
            "doctors",
            "CREATE TABLE doctors (doctor_id TEXT PRIMARY KEY, name TEXT NOT NULL, department_id TEXT NOT NULL, years_experience INTEGER NOT NULL)",
            doctors,
        ),
        Table("patients", "CREATE TABLE patients (patient_id TEXT PRIMARY KEY, name TEXT NOT NULL, birth_year INTEGER NOT NULL, city TEXT NOT NULL)", patients),
        Table(
            "appointments",
            "CREATE TABLE appointments (appointment_id INTEGER PRIMARY KEY, patient_id TEXT NOT NULL, doctor_id TEXT NOT NULL, date TEXT NOT NULL, time TEXT NOT NULL, status TEXT NOT NULL)",
            appts,
        ),
        Table("visit_notes", "CREATE TABLE visit_notes (note_id INTEGER PRIMARY KEY AUTOINCREMENT, appointment_id INTEGER NOT NULL, note TEXT NOT NULL)", []),
    ]
    tools = slot_family(["appointments", "departments", "doctors", "patients"]) + [
        endpoint(
            "get_patient",
            "A patient's record.",
            {"patient_id": (str, "Patient id, e.g. 'PT007'.")},
            "SELECT * FROM patients WHERE patient_id = :patient_id",
            "row",
        ),
        endpoint(
            "get_doctor",
            "A doctor's record with department name.",
            {"doctor_id": (str, "Doctor id, e.g. 'DR03'.")},
            "SELECT d.doctor_id, d.name, dep.name AS department, d.years_experience FROM doctors d JOIN departments dep ON dep.department_id = d.department_id WHERE d.doctor_id = :doctor_id",
            "row",
        ),
        endpoint(
            "list_doctors_in_department",
            "Doctors of a department (by department name).",
            {"department": (str, "Department name, e.g. 'Cardiology'.")},
            "SELECT d.doctor_id, d.name, d.years_experience FROM doctors d JOIN departments dep ON dep.department_id = d.department_id WHERE dep.name = :department ORDER BY d.doctor_id",
        ),
        endpoint(
            "get_department_floor",
            "Floor of a department.",
            {"department": (str, "Department name.")},
            "SELECT name, floor FROM departments WHERE name = :department",
            "row",
        ),
        endpoint(
            "list_patient_appointments",
            "A patient's appointments, oldest first.",
            {"patient_id": (str, "Patient id.")},
            "SELECT appointment_id, doctor_id, date, time, status FROM appointments WHERE patient_id = :patient_id ORDER BY date, time",
        ),
        endpoint(
            "get_appointment",
            "One appointment.",
            {"appointment_id": (int, "Appointment id.")},
            "SELECT * FROM appointments WHERE appointment_id = :appointment_id",
            "row",
        ),
        endpoint(
            "count_doctor_appointments",
            "Number of appointments of a doctor with a given status.",
            {"doctor_id": (str, "Doctor id."), "status": (str, "Status.", {"enum": ["booked", "completed", "cancelled", "no_show"]})},
            "SELECT COUNT(*) AS appointments FROM appointments WHERE doctor_id = :doctor_id AND status = :status",
            "row",
        ),
        endpoint(
            "doctor_schedule",
            "A doctor's booked slots on a date.",
            {"doctor_id": (str, "Doctor id."), "date": (str, "Date, YYYY-MM-DD.")},
            "SELECT time, patient_id FROM appointments WHERE doctor_id = :doctor_id AND date = :date AND status = 'booked' ORDER BY time",
        ),
        write(
            "book_appointment",
            "Book an appointment with a doctor in a free slot.",
            {
                "patient_id": (str, "Patient id."),
                "doctor_id": (str, "Doctor id."),
                "date": (str, "Date, YYYY-MM-DD."),
                "time": (str, "Time, HH:MM.", {"enum": TIMES}),
            },
            ["INSERT INTO appointments (patient_id, doctor_id, date, time, status) VALUES (:patient_id, :doctor_id, :date, :time, 'booked')"],
            precheck=(
                "SELECT 1 FROM patients p, doctors d WHERE p.patient_id = :patient_id AND d.doctor_id = :doctor_id",
                "unknown patient {patient_id} or doctor {doctor_id}",
            ),
            conflict=(
                "SELECT 1 FROM appointments WHERE doctor_id = :doctor_id AND date = :date AND time = :time AND status = 'booked'",
                "slot {date} {time} is already booked for {doctor_id}",
            ),
            result_sql="SELECT appointment_id, patient_id, doctor_id, date, time, status FROM appointments WHERE rowid = last_insert_rowid()",
        ),
        write(
            "cancel_appointment",
            "Cancel a booked appointment.",
            {"appointment_id": (int, "Appointment id.")},
            ["UPDATE appointments SET status = 'cancelled' WHERE appointment_id = :appointment_id"],
            precheck=(
                "SELECT 1 FROM appointments WHERE appointment_id = :appointment_id AND status = 'booked'",
                "appointment {appointment_id} is not a booked appointment",
            ),
            result_sql="SELECT appointment_id, status FROM appointments WHERE appointment_id = :appointment_id",
        ),
        write(
            "add_visit_note",
            "Attach a note to an appointment.",
            {"appointment_id": (int, "Appointment id."), "note": (str, "Note text.")},
            ["INSERT INTO visit_notes (appointment_id, note) VALUES (:appointment_id, :note)"],
            precheck=("SELECT 1 FROM appointments WHERE appointment_id = :appointment_id", "appointment {appointment_id} not found"),
            result_sql="SELECT note_id, appointment_id, note FROM visit_notes WHERE rowid = last_insert_rowid()",
        ),
        retriever("search_patient_leaflets", "Search the patient information leaflets (visiting hours, preparation, services)."),
    ]
    leaflets = [
        ("visiting", "Visiting hours", "Visiting hours on general wards are from 14:00 to 20:00; two visitors per patient at a time."),
        ("fasting", "Before a blood test", "Fast for 12 hours before a cholesterol blood test; water is allowed."),
        ("mri", "MRI preparation", "Remove all metal objects before an MRI scan; the scan takes about 45 minutes."),
        ("parking", "Parking", "Patient parking costs 3 euros per hour, capped at 15 euros per day."),
        ("cardio-floor", "Cardiology clinic", "The cardiology clinic is on floor 2; check in at the desk opposite the lifts."),
        ("prescriptions", "Repeat prescriptions", "Repeat prescriptions are ready for collection 48 hours after the request."),
        ("interpreter", "Interpreters", "Free interpreters are available in 30 languages; ask when booking."),
        ("late", "Late arrival", "Patients arriving more than 15 minutes late may be asked to rebook."),
        ("cancel", "Cancelling appointments", "Please cancel at least 24 hours before your appointment so the slot can be offered to another patient."),
        ("paeds", "Children's ward", "One parent may stay overnight with a child on the paediatric ward."),
        ("results", "Test results", "Most test results are available in the patient portal within 5 working days."),
        ("physio", "Physiotherapy", "A physiotherapy session lasts 40 minutes; wear loose clothing."),
    ]
    docs = [{"doc_id": f"leaflet-{k}", "title": t, "text": x} for k, t, x in leaflets]
    for dep_id, name, floor in DEPARTMENTS:
        docs.append(
            {
                "doc_id": f"dept-{dep_id}",
                "title": f"{name} department",
                "text": f"The {name} department is on floor {floor} and has {sum(1 for d in doctors if d[2] == dep_id)} consultants.",
            }
        )
    facts = {
        "doctors": doctors,
        "patients": patients,
        "appointments": appts,
        "departments": DEPARTMENTS,
        "dates": DATES,
        "times": TIMES,
        "doc_facts": [
            ("How many hours should I fast before a cholesterol blood test?", "12", "search_patient_leaflets", "fast before cholesterol blood test"),
            ("What is the daily cap on patient parking, in euros?", "15", "search_patient_leaflets", "parking cost capped per day"),
            ("How long does an MRI scan take, in minutes?", "45", "search_patient_leaflets", "MRI scan minutes"),
            ("How many hours ahead should I cancel an appointment?", "24", "search_patient_leaflets", "cancel appointment hours before"),
            ("In how many languages are interpreters available?", "30", "search_patient_leaflets", "interpreters languages"),
        ],
    }
    return Domain("hospital", tables, tools, docs, facts)
